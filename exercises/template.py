"""ELECTRA from blanks: the problem set. Write each body below, then let the project's checks
grade your file:

    cp exercises/template.py exercises/my_solution.py
    python exercises/grade.py exercises/my_solution.py --part encoder   # one part's checks
    python exercises/grade.py exercises/my_solution.py                  # the grade sheet

Twenty exercises in five parts, in the paper's order (Clark et al. 2020, arXiv 2003.10555) and
the code's; EXERCISES.md is the handout. Each docstring opens with the exercise's equation, says
what to read and gives a worked example. Until you write a body it raises
NotImplementedError("exercise N: write ..."), and its check fails with that line.

Where an exercise is a method of a class, the class derives from the project's, which builds the
parameters (their names and shapes are fixed, so the checks can load the answer key's weights):
you write the method. Call your own functions from your methods (SelfAttention.forward calls
your attention_reference, Electra.forward your mask_positions, ...), never the project's version
of an exercise: the checks grade this file.
"""
import math  # noqa: F401 (for your solutions)
import unicodedata  # noqa: F401 (for your basic_tokenize)

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401 (for your solutions)

import electra
import finetune
import tokenizer

# ================================================================================================
# Part 1. The encoder: exercises 1-5
# ================================================================================================

def attention_reference(q, k, v, keep, dropout: nn.Module):
    """Exercise 1. Attention with a padding mask: softmax(Q K^T / sqrt(d)) V.

    Scaled dot-product attention written out (Vaswani et al. 2017, eq. 1): the reference that
    the fast path (F.scaled_dot_product_attention) is tested against.

    Read: the paper's Section 2, first paragraph (G and D are both Transformer encoders, BERT's);
    Vaswani et al. 2017, Section 3.2.1 and eq. 1; electra.py's section "The Transformer encoder".

    q, k, v: [B, heads, T, d]; keep: [B, 1, 1, T] bool, True where the KEY is a real token and
    False on padding (it broadcasts over heads and queries; electric.py passes [B, 1, T, T], a
    mask per query, so write it to broadcast either); dropout: a module to apply to the
    attention weights. Return [B, heads, T, d]:

        scores = q k^T / sqrt(d)                 [B, heads, T, T], one row per query
        scores = the dtype's minimum where keep is False (torch.finfo(scores.dtype).min, not
                 -inf: a query whose keys are all padding would get softmax 0/0 = nan)
        output = dropout(softmax(scores over the keys)) @ v

    Example: d = 4, one query q = [2 ln 3, 0, 0, 0], keys k0 = [1, 0, 0, 0], k1 = 0, values
    v0 = [4, 0, 0, 0], v1 = [0, 4, 0, 0]: scores [ln 3, 0], weights [3/4, 1/4], output
    [3, 1, 0, 0]. With keep [True, False] (key 1 padding): weights [1, 0], output [4, 0, 0, 0].
    """
    raise NotImplementedError("exercise 1: write attention_reference")


class SelfAttention(electra.SelfAttention):
    def forward(self, h, keep):
        """Exercise 2. Multi-head self-attention, softmax(Q K^T / sqrt(d)) V, with a padding mask.

        Read: Vaswani et al. 2017, Section 3.2.2 (multi-head attention); electra.py's
        SelfAttention.__init__ (the parameters you use: self.qkv, self.out, self.attn_drop,
        self.n_head).

        h: [B, T, H]; keep: [B, 1, 1, T] bool (True on real keys). Return [B, T, H]:
        1. self.qkv(h) is [B, T, 3H]: Q, K, V in that order, each [B, T, H].
        2. Split each into heads: [B, T, H] -> [B, T, heads, d] -> [B, heads, T, d],
           d = H / heads (head j owns the features j*d .. (j+1)*d - 1).
        3. Your attention_reference(q, k, v, keep, self.attn_drop): [B, heads, T, d].
        4. Merge the heads back: [B, heads, T, d] -> [B, T, heads, d] -> [B, T, H].
        5. The output projection self.out.
        (config.fast_attention does not matter here: always call your attention_reference.)

        Example: with one token (T = 1) it attends to itself alone, and the output is
        self.out(V) with V = the last third of self.qkv(h).
        """
        raise NotImplementedError("exercise 2: write SelfAttention.forward")


class Block(electra.Block):
    def forward(self, h, keep):
        """Exercise 3. A post-LayerNorm Transformer block (BERT): h = LN(h + Attn(h));
        h = LN(h + FFN(h)), FFN(h) = fc2(GELU(fc1(h))) with GELU in its exact erf form.

        Read: Vaswani et al. 2017, Sections 3.1 (the residual, then LayerNorm) and 3.3 (the
        FFN); BERT (Devlin et al. 2019), Appendix A.2 (GELU); electra.py's Block.__init__
        (self.attn, self.ln1, self.fc1, self.fc2, self.ln2, self.drop).

        h: [B, T, H]; keep: [B, 1, 1, T] (pass it on to self.attn). Return [B, T, H]:
            h = self.ln1(h + self.drop(self.attn(h, keep)))
            h = self.ln2(h + self.drop(FFN(h)))
        with the LayerNorm AFTER each residual sum (post-LN; GPT-2 and many later models put it
        before) and GELU(x) = x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, F.gelu's default, not its
        tanh approximation.

        Example: H = 4, FFN = 0 and Attn(h) = [2, 1, 1, 1] for h = [0, 0, 0, 2]:
        LN([2, 1, 1, 3]) = [0.3015, -0.9045, -0.9045, 1.5076], and that is the output.
        """
        raise NotImplementedError("exercise 3: write Block.forward")


class Embeddings(electra.Embeddings):
    def forward(self, input_ids, segment_ids):
        """Exercise 4. Token + position + segment embeddings, LayerNorm, dropout (BERT). Shared
        by G and D.

        Read: BERT (Devlin et al. 2019), Section 3 ("Input/Output Representations", Figure 2);
        the paper's Section 3.2 (G and D share these embeddings); electra.py's
        Embeddings.__init__ (self.word, self.position, self.segment, self.ln, self.drop).

        input_ids, segment_ids: [B, T] long. Return [B, T, E], E = config.embedding_size:
        self.drop(self.ln(word(input_ids) + position(t) + segment(segment_ids))), where the
        positions are t = 0, 1, ..., T - 1 (learned, one row each, the same for every row of
        the batch).

        Example: E = 4, LayerNorm the identity, word[3] = [0, 0, 0, 1], position[0] =
        [0, 0, 0, 3], segment[0] = 0: token 3 at position 0 in segment 0 is
        LN([0, 0, 0, 4]) = [-0.5774, -0.5774, -0.5774, 1.7321].
        """
        raise NotImplementedError("exercise 4: write Embeddings.forward")


class Encoder(electra.Encoder):
    def hidden_states(self, input_ids, segment_ids, attention_mask, keep=None):
        """Exercise 5. The encoder: embeddings, projection, blocks.

        input_ids, segment_ids, attention_mask: [B, T] -> the last layer's states [B, T, H].

        Read: the paper's Section 3.2 ("Weight Sharing": G and D share one embedding table but
        have different widths, so each projects it to its own hidden size); electra.py's
        Encoder.__init__ (self.embeddings, self.embeddings_project, self.layers).

        attention_mask: 1 on real tokens, 0 on padding. keep: which keys each query may attend
        to ([B, 1, T, T] bool, electric.py's one-sided towers); when it is None, build it from
        attention_mask as [B, 1, 1, T] bool, True on real tokens (it broadcasts over heads and
        queries). Then:
            h = self.embeddings(input_ids, segment_ids)          [B, T, E]
            h = self.embeddings_project(h) if it is not None     [B, T, H] (None when E == H)
            h = block(h, keep) for each block of self.layers, in order
        and return h.

        Example: attention_mask [[1, 1, 0]] -> keep of shape [1, 1, 1, 3], [True, True, False].
        """
        raise NotImplementedError("exercise 5: write Encoder.hidden_states")


# ================================================================================================
# Part 2. Section 2, masking to the loss: exercises 6-13
# ================================================================================================

# ---- exercises 6-9: from x to x_hat ----

def mask_positions(x, attention_mask, config: electra.ElectraConfig,
                   rng: torch.Generator | None = None):
    """Exercise 6. Choose the positions to mask: m_i ~ unif{1, n} for i = 1..k       (paper, Sec. 2)

    Read: the paper's Section 2 (the masking step of Figure 2), and the official
    pretrain_helpers.mask that electra.py's docstring describes.

    x: [B, T] token ids; attention_mask: [B, T] (1 on real tokens, 0 on padding); config has
    mask_prob, max_predictions, cls_id, sep_id, mask_id, pad_id; rng: draw every random number
    from it (torch.rand(..., generator=rng)), so a seeded generator gives the same masks.

    Per row, n = the number of real tokens ([CLS] and [SEP] included) and
    k = min(K, round(mask_prob * n)), at least 1, with K = min(max_predictions, T). round() is
    round-half-to-even, as torch.round: n = 10 -> round(1.5) = 2, n = 30 -> round(4.5) = 4.
    Never choose [CLS], [SEP], [MASK] or padding; never choose a position twice within one row;
    if a row has fewer than k candidates, k is that number. Every candidate must be equally
    likely.

    Returns m: [B, K] long, positions; m_valid: [B, K] bool, True on the first k slots of each row
    (the slots after them may hold any position and are ignored).

    Example: one row [CLS] a b c d e f g h [SEP] (n = 10) with mask_prob 0.15, max_predictions 3:
    k = 2, m = e.g. [[4, 7, 1]], m_valid = [[True, True, False]].
    """
    raise NotImplementedError("exercise 6: write mask_positions")


def mask_tokens(x, m, m_valid, config: electra.ElectraConfig,
                rng: torch.Generator | None = None):
    """Exercise 7. Mask the chosen tokens: x_masked = REPLACE(x, m, [MASK])          (paper, Sec. 2)

    Read: the paper's Section 2 (the second step of Figure 2), and the docstring of
    electra.mask_tokens: the official pretrain_helpers.mask makes 85% of the chosen tokens [MASK]
    and keeps 15% unchanged, without BERT's random tokens (Devlin et al. 2019, Sec. 3.1: 80%
    [MASK], 10% random, 10% kept).

    x: [B, T] token ids; m: [B, K] positions (distinct within a row), m_valid: [B, K] bool, as
    your mask_positions returns them; config.mask_token_prob (0.85) and config.mask_id; rng: draw
    every random number from it.

    Each used slot (m_valid True) becomes [MASK] with probability mask_token_prob, on its own,
    and keeps its original token otherwise; the unused slots and every other position keep their
    tokens. Never a random token (that is BERT's 80/10/10). Return a new [B, T] tensor: x itself
    must not change (the losses need the original tokens).

    Example: x = [[CLS, 7, 8, 9, SEP]], m = [[3, 1, 2]], m_valid = [[True, True, False]]: with
    mask_token_prob 1 -> [[CLS, MASK, 8, MASK, SEP]] (slot 2 is unused, 8 stays); with 0.85 the
    two used slots are each [MASK] with probability 0.85, so e.g. [[CLS, 7, 8, MASK, SEP]] 13% of
    the time (0.15 x 0.85).
    """
    raise NotImplementedError("exercise 7: write mask_tokens")


class Generator(electra.Generator):
    """G, the project's module: its parameters, built by the inherited __init__, are head (a
    Linear Hg -> E), head_ln (LayerNorm over E), output_bias [V], and embeddings.word, the token
    embedding e that G shares with D ([V, E])."""

    def logits(self, h, m):
        """Exercise 8. The generator's output: p_G at the masked positions, through the tied
        embedding.

            p_G(x_t | x) = exp(e(x_t)^T h_G(x)_t) / sum_x' exp(e(x')^T h_G(x)_t)   (paper, Sec. 2)

        h: [B, T, Hg] states; m: [B, K] positions -> logits [B, K, V] of p_G there.

        Read: the paper's Section 2 (the equation above: the output layer is the token embedding
        e itself) and Section 3.2 ("Weight Sharing": G and D share e), and the docstring of
        electra.Generator (the official code's head before e).

        Take h at the positions m only (a V-way output at every position would waste most of the
        step): h_m [B, K, Hg]. Then as the official code: z = LayerNorm(GELU(head(h_m))) [B, K, E]
        with F.gelu's exact form, and logits = z e^T + output_bias [B, K, V], with e =
        self.embeddings.word.weight (tied: no matrix of your own). softmax(logits) is p_G.

        Example: V = 3, E = Hg = 2, head the identity, e = [[1, 0], [0, 1], [2, -1]], output_bias
        [0, 0.5, -1], h = [[[-3, -0.5], [5, 0], [1, 2]]], m = [[2, 0]]: position 2:
        GELU -> [0.84, 1.95], LayerNorm of two numbers -> [-1, 1], z e^T = [-1, 1, -3], + bias
        -> [-1, 1.5, -4]; position 0: GELU -> [-0.004, -0.154] -> [1, -1] -> [1, -0.5, 2].
        logits = [[[-1, 1.5, -4], [1, -0.5, 2]]].
        """
        raise NotImplementedError("exercise 8: write Generator.logits")


def sample(logits, temperature: float = 1.0, rng: torch.Generator | None = None):
    """Exercise 9. Sample G's tokens: x_hat_i ~ p_G(x_i | x_masked) for i in m       (paper, Sec. 2)

    Read: the paper's Section 2 (the sampling step of Figure 2, and "we do not back-propagate
    the discriminator loss through the generator"), and the docstring of electra.sample (the
    official sample_from_softmax).

    logits: [..., V] -> token ids [...] long, one draw from softmax(logits / temperature) per
    row of the last axis. Use the Gumbel-max trick: argmax(logits / temperature + g) with
    g = -log(-log(u)), u ~ U(0, 1) drawn from rng (keep both logs finite: clamp u and -log(u)
    away from 0). Divide by the temperature before adding the noise. No gradient: decorate the
    function with @torch.no_grad() or work on logits.detach().

    Example: logits [0, -inf, 0, -inf] -> 0 or 2, each half the time, never 1 or 3; logits
    ln[1, 2, 3, 4] at temperature 1 -> token 3 in 40% of the draws, at temperature 2 in
    2 / (1 + 1.414 + 1.732 + 2) = 32.5%; temperature 0.001 -> the argmax, always.
    """
    raise NotImplementedError("exercise 9: write sample")


# ---- exercises 10-13: from x_hat to the loss ----

def corrupt(x, m, m_valid, x_hat):
    """Exercise 10. D's input and its labels.

    x_corrupt = REPLACE(x, m, x_hat);  is_original_t = 1(x_corrupt_t = x_t)       (paper, Sec. 2)

    Read: the paper's Section 2 (the paragraph after eq. 2: "if the generator happens to generate
    the correct token, that token is considered 'real' instead of 'fake'"), and electra.replace.

    x: [B, T] the original token ids; m: [B, K] the masked positions (distinct within a row);
    m_valid: [B, K] bool, True on the slots that were masked (the others point at positions that
    were not, and must not change); x_hat: [B, K] G's samples, one per slot.
    Return x_corrupt: [B, T], x with x_hat written at the used slots' positions (a new tensor: x
    must not change), and is_original: [B, T] bool, True where x_corrupt equals x. A sample equal
    to the original token counts as original.

    Example: x [[5, 6, 7, 8]], m [[2, 1, 3]], m_valid [[True, True, False]], x_hat [[9, 6, 4]]:
    x_corrupt [[5, 6, 9, 8]] (slot 2 is unused: position 3 keeps its 8), is_original
    [[True, True, False, True]] (position 1 was sampled as its own token 6).
    """
    raise NotImplementedError("exercise 10: write corrupt")


def mlm_loss(logits, targets, m_valid):
    """Exercise 11. The generator's masked-language-modeling loss.

    L_MLM(x, theta_G) = E[ sum_{i in m} -log p_G(x_i | x_masked) ]               (paper, Sec. 2)

    Read: the paper's Section 2 (eq. 1 and L_MLM), and notebooks/02_losses_by_hand.ipynb.

    logits: [B, K, V] G's logits at the masked positions, p_G = softmax(logits); targets: [B, K]
    the original tokens x_i there; m_valid: [B, K] bool, the used slots. Return, as a scalar tensor
    that gradients flow through, the mean of -log p_G(x_i) over the used slots of the whole batch
    (as the official code averages: not a sum, not a mean of per-row means); the unused slots
    count for nothing. Stay finite for confident logits: take log p_G from log_softmax (or
    F.cross_entropy), never as the log of a softmax that has rounded to 0.

    Example: logits [[[0, 0, 0], [ln 3, 0, 0]], [[0, ln 2, 0], [100, 0, 0]]], targets
    [[1, 0], [1, 2]], m_valid [[True, True], [True, False]]: -log p = ln 3, ln 5/3, ln 2 on the
    used slots -> (ln 3 + ln 5/3 + ln 2) / 3 = ln 10 / 3 = 0.7675.
    """
    raise NotImplementedError("exercise 11: write mlm_loss")


def disc_loss(logits, is_original, weights):
    """Exercise 12. The discriminator's loss.

    L_Disc(x, theta_D) = E[ sum_{t=1}^n -1(x_corrupt_t = x_t) log D(x_corrupt, t)
                                 -1(x_corrupt_t != x_t) log(1 - D(x_corrupt, t)) ]  (paper, Sec. 2)

    Read: the paper's Section 2 (eq. 2 and the sentence after it), and
    notebooks/02_losses_by_hand.ipynb.

    logits: [B, T] with D = sigmoid(logits) the probability that the token is *original* (the
    paper's D; the official code and HuggingFace score "replaced" instead); is_original: [B, T]
    bool; weights: [B, T] 0/1 (int or float), which tokens count: for ELECTRA the attention mask,
    every real token ([CLS] and [SEP] included, padding excluded). Return the mean over the
    weighted tokens of the whole batch (not per row) as a scalar tensor that gradients flow
    through. It must stay finite for confident logits such as +-200: compute log D and
    log(1 - D) from the logits directly (log(1 - sigmoid(z)) = log sigmoid(-z)), never as the log
    of a sigmoid that has rounded to 0.

    Example: logits [[0, ln 3, ln 3, 9]], is_original [[True, True, False, True]],
    weights [[1, 1, 1, 0]]: D = 0.5, 0.75, 0.75 -> (ln 2 + ln(4/3) + ln 4) / 3 = 0.7890.
    """
    raise NotImplementedError("exercise 12: write disc_loss")


class Electra(electra.Electra):
    """Generator and discriminator trained jointly: electra.Electra's parameters (self.generator,
    self.discriminator sharing one embedding table), with the forward you write."""

    def forward(self, input_ids, segment_ids, attention_mask,
                rng: torch.Generator | None = None,
                temperature: float | None = None) -> electra.ElectraOutput:
        """Exercise 13. One pre-training step: Section 2's steps in the module docstring's order,
        then the loss.

        min_{theta_G, theta_D} sum_x L_MLM(x, theta_G) + lambda L_Disc(x, theta_D)  (paper, Sec. 2)

        Read: the paper's Section 2 and Figure 2, electra.py's module docstring (the table of the
        steps: "the module docstring" above), and electra.ElectraOutput's fields.

        For the "electra" objective with joint training (the only one you write). input_ids,
        segment_ids, attention_mask: [B, T]; rng: hand it to your mask_positions, mask_tokens and
        sample; temperature: G's sampling temperature, config.temperature when None. With x the
        input_ids and cfg = self.config:
          1. m, m_valid = mask_positions(x, attention_mask, cfg, rng)               [B, K]
          2. x_masked = mask_tokens(x, m, m_valid, cfg, rng)                        [B, T]
          3. G's logits at m on x_masked: self.generator.hidden_states(x_masked, segment_ids,
             attention_mask) then self.generator.logits(h, m), or in one call
             self.generator(x_masked, segment_ids, attention_mask, m)             [B, K, V]
          4. x_hat = sample(logits_G, temperature, rng)                             [B, K]
          5. x_corrupt, is_original = corrupt(x, m, m_valid, x_hat)                 [B, T]
          6. logits_D = self.discriminator(x_corrupt, segment_ids, attention_mask)  [B, T]
          7. L_MLM = mlm_loss(logits_G, the original tokens of x at m, m_valid);
             L_Disc = disc_loss(logits_D, is_original, attention_mask);
             loss = L_MLM + cfg.lam * L_Disc.
        Call YOUR functions (this file's mask_positions, ..., disc_loss), never electra's. No
        gradient of L_Disc may reach G: x_hat is a sample (Sec. 2).
        Return electra.ElectraOutput(loss=..., mlm_loss=L_MLM, disc_loss=L_Disc, m=m,
        m_valid=m_valid, x_masked=x_masked, logits_G=logits_G, x_corrupt=x_corrupt,
        logits_D=logits_D).

        Example: lambda = 50, L_MLM = 5.0, L_Disc = 0.5 -> loss = 5.0 + 50 x 0.5 = 30.0: most of
        the loss is D's, though D's loss per token is ten times smaller than G's.
        """
        raise NotImplementedError("exercise 13: write Electra.forward")


# ================================================================================================
# Part 3. The tokenizer: exercises 14-15
# ================================================================================================

def basic_tokenize(text: str, lowercase: bool = True) -> list[str]:
    """Exercise 14. BERT's basic tokenization: a text -> its normalised words.

    Stage 1, BERT's BasicTokenizer (tokenization.py) on a text: the words WordPiece splits.

    Read: the paper's Section 3.1 (ELECTRA uses BERT's uncased WordPiece vocabulary), BERT (Devlin
    et al. 2019) Section 3, and the module docstring of tokenizer.py (stage 1).

    Do these steps in this order, as BERT's BasicTokenizer does (unicodedata, imported above:
    unicodedata.category(ch) is a character's Unicode category, such as "Lu", "Mn", "Po", "Cc"):
    1. Clean: drop U+FFFD (the replacement character) and every control character, i.e. category
       C* (Cc, Cf, Co, Cs, Cn) except tab, newline and CR; then write " " for every whitespace
       character: " ", "\\t", "\\n", "\\r" or category Zs.
    2. Put a space on both sides of every CJK ideograph, so that each is a word of its own.
       Call tokenizer.is_cjk(ch) for the test (given: a table of Unicode blocks); kana and Hangul
       are not CJK ideographs.
    3. Split on whitespace (str.split()).
    4. Only if lowercase: lowercase each word (str.lower), then strip its accents: decompose it,
       unicodedata.normalize("NFD", word), and drop the characters of category Mn.
       lowercase=False (a cased vocab) leaves case and accents alone.
    5. Split each word so that every punctuation character stands alone. Punctuation is Unicode
       category P*, or any ASCII character in 33-47, 58-64, 91-96, 123-126 (all of ASCII that is
       neither a letter, a digit, a space nor a control), so "$", "+", "^", "`" count although
       Unicode calls them symbols; "€" does not.
    6. Return the pieces, none of them empty (a word that was only accents is gone).

    Example: "Héllo, WORLD!! 中文" -> ['hello', ',', 'world', '!', '!', '中', '文'];
             "Héllo, WORLD!!" with lowercase=False -> ['Héllo', ',', 'WORLD', '!', '!'];
             "a\\tb\\x07c $5€" -> ['a', 'bc', '$', '5€'].
    """
    raise NotImplementedError("exercise 14: write basic_tokenize")


def wordpiece(word: str, vocab: dict[str, int] | set[str],
              config: tokenizer.WordPieceConfig = tokenizer.CONFIG) -> list[str]:
    """Exercise 15. BERT's greedy longest-match-first WordPiece on one word.

    Stage 2, greedy longest-match-first WordPiece (BERT's WordpieceTokenizer.tokenize) on a word.

    Read: the paper's Section 3.1 (ELECTRA uses BERT's WordPiece vocabulary), BERT (Devlin et al.
    2019) Section 3, and the module docstring of tokenizer.py (stage 2).

    From the start of the word take the longest prefix that is in the vocab; continue from where it
    ended, now looking for pieces with config.prefix ("##") in front ("##able" continues a word,
    "able" starts one). If at some point no piece matches, the whole word is [config.unk]
    (["[UNK]"]): no partial output. A word longer than config.max_input_chars_per_word (200)
    characters is [config.unk] at once. There is no backtracking: greedy is what BERT does even
    where another split would exist. Read the three constants from config; the check passes
    another config too.

    Example: vocab {"un", "##aff", "##able", "a", "##b"}: "unaffable" -> ["un", "##aff", "##able"],
    "ab" -> ["a", "##b"], "abc" -> ["[UNK]"].
    """
    raise NotImplementedError("exercise 15: write wordpiece")


# ================================================================================================
# Part 4. Fine-tuning: exercises 16-18
# ================================================================================================

def layer_lr_scales(num_layers: int, decay: float, official: bool = True) -> list[float]:
    """Exercise 16. Layer-wise learning-rate decay for fine-tuning.

    Multiplier of the peak lr at each depth 0..num_layers+1 (embeddings .. task head).

    The embeddings are depth 0, the encoder layers depths 1..num_layers, the task head the top.

    Read: the paper's Appendix A (fine-tuning details, "layer-wise learning-rate decay", Table 7's
    0.8 for Small and Base, 0.9 for Large) and finetune.py's layer_depth and param_groups.

    A parameter at depth d gets lr * decay ** (top - d); the head gets lr (scale 1.0). As the paper
    describes it (official=False), top = num_layers + 1, the head's depth. The official code
    (model/optimization.py, _get_layer_lrs) puts the head at depth num_layers + 2 instead, so every
    encoder layer gets one more factor of decay; official=True reproduces that, since it made the
    paper's numbers. Return num_layers + 2 floats:
    [embeddings, layer 0, ..., layer num_layers-1, head].

    Example: layer_lr_scales(2, 0.5) = [0.0625, 0.125, 0.25, 1.0];
             layer_lr_scales(2, 0.5, official=False) = [0.125, 0.25, 0.5, 1.0].
    """
    raise NotImplementedError("exercise 16: write layer_lr_scales")


class AdamWeightDecay(finetune.AdamWeightDecay):
    @torch.no_grad()  # an update of the parameters in place, not a step of the graph
    def step(self, closure=None):
        """Exercise 17. The official fine-tuning optimizer's update.

        The official fine-tuning optimizer (model/optimization.py AdamWeightDecayOptimizer,
        BERT's):

            m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
            p = p - lr (m / (sqrt(v) + eps) + weight_decay p)

        Read: the paper's Appendix A (Table 7: Adam's betas and eps, weight decay), and the
        docstring of finetune.AdamWeightDecay, which compares this update with torch's AdamW.

        For each group of self.param_groups (its own group["lr"], group["betas"], group["eps"],
        group["weight_decay"]: finetune.param_groups gives each depth its lr) and each parameter p
        of group["params"] whose p.grad is not None (skip the others: no update, no state), keep m
        and v in self.state[p]["m"] and self.state[p]["v"] (zeros like p at the first update) and
        update p in place. Two differences from torch.optim.AdamW: no bias correction (m and v
        are used as they are, never divided by 1 - beta^t), and eps is added to sqrt(v). The
        weight decay is decoupled: weight_decay * p joins the update; it is not added to g.
        closure is unused (torch's interface); return nothing.

        Example: p = 1, g = 2, lr 0.1, betas (0.9, 0.999), eps 1e-6, weight_decay 0:
        m = 0.2, v = 0.004, update = 0.2 / (0.0632456 + 1e-6) = 3.16223, p -> 0.6837772
        (AdamW would move p by 0.1, a third as far). With weight_decay 0.5: update 3.66223,
        p -> 0.6337772.
        """
        raise NotImplementedError("exercise 17: write AdamWeightDecay.step")


class Classifier(finetune.Classifier):
    def forward(self, input_ids, segment_ids, attention_mask):
        """Exercise 18. The classification head on the [CLS] state.

        The pre-trained encoder plus a task head on the [CLS] state:
        logits = W dropout(h_[CLS]) + b.

        Read: the paper's Appendix A (fine-tuning on GLUE) and BERT (Devlin et al. 2019) Section
        4.1, and finetune.Classifier's docstring (the official head, and HuggingFace's).

        input_ids, segment_ids, attention_mask: [B, T]. self.encoder.hidden_states(input_ids,
        segment_ids, attention_mask) gives the last layer's states h, [B, T, H]; h_[CLS] is the
        state at position 0, [B, H]. Apply self.dropout to it, then self.classifier (W, b):
        return the logits [B, C]. No pooler: ELECTRA's head has no dense + tanh layer before the
        classifier (BERT's next-sentence pooler), and nothing is averaged over the tokens.
        self.dropout acts only in train mode (model.train()); model.eval() turns it off.

        Example: h_[CLS] = [1, 2, 3, 4], W = [[1, 0, 0, 0], [0, 0, 0, 1]], b = [0.5, -1], eval
        mode -> logits [1.5, 3]. In train mode with dropout 0.5 each unit of h_[CLS] is either
        dropped (0) or doubled, so the logits are [2.5, 7], [0.5, 7], [2.5, -1] or [0.5, -1],
        from call to call.
        """
        raise NotImplementedError("exercise 18: write Classifier.forward")


# ================================================================================================
# Part 5. Beyond the paper's main method: exercises 19-20
# ================================================================================================

def nce_logits(energies, log_q, noise_rate: float):
    """Exercise 19. Electric's NCE logit: is token t data, or noise drawn from q?

        s_t = log[(1 - p) exp(-E(x)_t)] - log[p q(x_t | x_\\t)]
            = -(E(x)_t + log q(x_t | x_\\t) + log(p / (1 - p)))           (paper, NCE posterior)

    Read: Clark, Luong, Le, Manning (EMNLP 2020), "Pre-Training Transformers as Energy-Based
    Cloze Models" (Electric: ELECTRA's sibling by the same authors), its method: the NCE loss
    and the training algorithm; and electric.py's module docstring, is_data and nce_loss.

    Electric's energy network gives each token an energy E(x)_t (low = likely under
    p_theta(x_t | x_\\t) = exp(-E) / Z); a share p (noise_rate, config.mask_prob) of the
    positions hold noise sampled from q instead. sigmoid(s_t) is then the posterior probability
    that token t is data: (1 - p) exp(-E) / ((1 - p) exp(-E) + p q). Work with E and log q
    directly, never exp(-E): E = -100 must give a finite s.

    energies: [B, T], the energy network's output, float32 or, under mixed precision, bfloat16
    or float16; log_q: [B, T] log q(x_t | x_\\t) of the token each position holds;
    noise_rate: p, a float with 0 < p < 1. Return s: [B, T] float32 (compute in float32 whatever
    the inputs' dtype: the loss reads s), with gradient flowing to the energies.

    Example: E = 1, q = 1/2, p = 1/2: s = -(1 + log 1/2 + 0) = -0.3069;
             E = 2, q = 1/4, p = 0.15: s = -(2 - 1.3863 - 1.7346) = 1.1209.
    """
    raise NotImplementedError("exercise 19: write nce_logits")


def init_discriminator_from_generator(model: electra.Electra) -> None:
    """Exercise 20. Two-stage training's switch: D's encoder := G's (embeddings, projection,
    blocks). D's head keeps its initialisation: G's is an MLM head, not a binary classifier.

    Read: the paper's Section 3.2 ("Training Algorithms": two-stage training, and why D starts
    from G's weights), and electra.py's two_stage_loss; train.py calls this function once, at the
    end of stage 1, with the optimizer already built.

    model: an electra.Electra with config.algorithm "two-stage" and sharing "none", so G
    (model.generator) and D (model.discriminator) have the same shape and share nothing. For every
    tensor of D's state_dict except its head (head.*, head_out.*), copy the values of G's tensor
    of the same name into it. Return None. Rules: copy values into D's own Parameters in place
    (the optimizer holds them; a new Parameter would never be trained), never share G's tensors
    (stage 2 trains D with G frozen), leave G unchanged, and record no gradient (copying into a
    Parameter that requires grad must happen under torch.no_grad()).

    Example: G's layers.0.fc1.weight and embeddings.word.weight become D's; D's head.weight
    keeps its own values although G also has a head.weight of the same shape.
    """
    raise NotImplementedError("exercise 20: write init_discriminator_from_generator")

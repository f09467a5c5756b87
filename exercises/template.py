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
import math  # noqa: F401 (until the exercises are in)

import torch
import torch.nn as nn  # noqa: F401 (until the exercises are in)
import torch.nn.functional as F  # noqa: F401 (until the exercises are in)

import electra
import electric  # noqa: F401 (until the exercises are in)
import finetune  # noqa: F401 (until the exercises are in)
import tokenizer  # noqa: F401 (until the exercises are in)

# ================================================================================================
# Part 1. The encoder: exercises 1-5
# ================================================================================================

# (exercises 1-5 go here)


# ================================================================================================
# Part 2. Section 2, masking to the loss: exercises 6-13
# ================================================================================================

# ---- exercises 6-9: from x to x_hat ----

def mask_positions(x: torch.Tensor, attention_mask: torch.Tensor, config,
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
    Never choose [CLS], [SEP], [MASK] or padding; never choose a position twice in a row; if a row
    has fewer than k candidates, k is that number. Every candidate must be equally likely.

    Returns m: [B, K] long, positions; m_valid: [B, K] bool, True on the first k slots of each row
    (the slots after them may hold any position and are ignored).

    Example: one row [CLS] a b c d e f g h [SEP] (n = 10) with mask_prob 0.15, max_predictions 3:
    k = 2, m = e.g. [[4, 7, 1]], m_valid = [[True, True, False]].
    """
    raise NotImplementedError("exercise 6: write mask_positions")


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

# (exercise 14 goes here)


def wordpiece(word: str, vocab: set[str] | dict[str, int]) -> list[str]:
    """Exercise 15. BERT's greedy longest-match-first WordPiece on one word.

    Read: the paper's Section 3.1 (ELECTRA uses BERT's WordPiece vocabulary), BERT (Devlin et al.
    2019) Section 3, and the module docstring of tokenizer.py (stage 2).

    From the start of the word take the longest prefix that is in the vocab; continue from where it
    ended, now looking for pieces written with the "##" prefix ("##able" continues a word, "able"
    starts one). If at some point no piece matches, the whole word is ["[UNK]"] (no partial
    output), and a word longer than 200 characters is ["[UNK]"] at once. There is no backtracking:
    greedy is what BERT does even where another split would exist.

    Example: vocab {"un", "##aff", "##able", "a", "##b"}: "unaffable" -> ["un", "##aff", "##able"],
    "ab" -> ["a", "##b"], "abc" -> ["[UNK]"].
    """
    raise NotImplementedError("exercise 15: write wordpiece")


# ================================================================================================
# Part 4. Fine-tuning: exercises 16-18
# ================================================================================================

def layer_lr_scales(num_layers: int, decay: float, official: bool = True) -> list[float]:
    """Exercise 16. Layer-wise learning-rate decay for fine-tuning: the multiplier of the peak lr
    at each depth, embeddings (depth 0), the encoder layers (depths 1..num_layers), the task head.

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


# (exercises 17-18 go here)


# ================================================================================================
# Part 5. Beyond the paper's main method: exercises 19-20
# ================================================================================================

# (exercises 19-20 go here)

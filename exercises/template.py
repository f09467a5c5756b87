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

import electra  # noqa: F401 (until the exercises are in)
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
    Never choose [CLS], [SEP], [MASK] or padding; never choose a position twice in a row; if a row
    has fewer than k candidates, k is that number. Every candidate must be equally likely.

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

def disc_loss(logits: torch.Tensor, is_original: torch.Tensor,
              weights: torch.Tensor) -> torch.Tensor:
    """Exercise 12. The discriminator's loss                                          (paper, eq. 2)

        L_Disc = E[ sum_t -1(x_corrupt_t = x_t) log D(x_corrupt, t)
                          - 1(x_corrupt_t != x_t) log(1 - D(x_corrupt, t)) ]

    Read: the paper's Section 2 (eq. 2 and the sentence after it), and
    notebooks/02_losses_by_hand.ipynb.

    logits: [B, T] with D = sigmoid(logits) the probability that the token is *original* (the
    paper's D; the official code and HuggingFace score "replaced" instead); is_original: [B, T]
    bool; attention_mask: [B, T]. Return the mean over every real token of the batch ([CLS] and
    [SEP] included, padding excluded) as a scalar tensor that gradients flow through. It must stay
    finite for confident logits such as +-200: compute log D and log(1 - D) from the logits directly
    (log(1 - sigmoid(z)) = log sigmoid(-z)), never as the log of a sigmoid that has rounded to 0.

    Example: logits [[0, ln 3, ln 3, 9]], is_original [[True, True, False, True]],
    attention_mask [[1, 1, 1, 0]]: D = 0.5, 0.75, 0.75 -> (ln 2 + ln(4/3) + ln 4) / 3 = 0.7890.
    """
    raise NotImplementedError("exercise 12: write disc_loss")


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

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
    noise_rate: p, a float. Return s: [B, T] float32 (compute in float32 whatever the inputs'
    dtype: the loss reads s), with gradient flowing to the energies.

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

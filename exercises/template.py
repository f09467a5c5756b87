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
import tokenizer

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

def basic_tokenize(text: str, lowercase: bool = True) -> list[str]:
    """Exercise 14. BERT's basic tokenization: a text -> its normalised words.

    Stage 1, BERT's BasicTokenizer (tokenization.py) on a text: the words WordPiece splits.

    Read: the paper's Section 3.1 (ELECTRA uses BERT's uncased WordPiece vocabulary), BERT (Devlin
    et al. 2019) Section 3, and the module docstring of tokenizer.py (stage 1).

    Do these steps in this order, as BERT's BasicTokenizer does (import unicodedata:
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

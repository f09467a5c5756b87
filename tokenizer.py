"""BERT's WordPiece tokenizer, written out step by step (stdlib, and tqdm for progress bars).

ELECTRA (Clark et al. 2020, Sec. 3.1 and Appendix A) uses BERT's uncased WordPiece vocabulary
(Devlin et al. 2019, Sec. 3; the vocab comes from Wu et al. 2016 / Schuster and Nakajima 2012).
Turning text into ids takes two stages, as in the official BERT code (tokenization.py):

1. BasicTokenizer (basic_tokenize): clean_text, space_cjk, then per word lowercase and
   strip_accents (uncased vocab only) and split_on_punctuation: the text as normalised words.
2. WordpieceTokenizer (wordpiece): each word split greedily into the longest pieces in the vocab,
   continuation pieces carrying the "##" prefix; a word that cannot be split becomes [UNK].

    >>> specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    >>> tok = Tokenizer(specials + ["un", "##aff", "##able", "!"])
    >>> tok.tokenize("Unaffable! xyz")
    ['un', '##aff', '##able', '!', '[UNK]']
    >>> tok.encode("Unaffable!")
    [5, 6, 7, 8]
    >>> tok.encode_pair("Unaffable!", "un", max_len=8)  # [CLS] A [SEP] B [SEP], and segment ids
    ([2, 5, 6, 7, 8, 3, 5, 3], [0, 0, 0, 0, 0, 0, 1, 1])
    >>> tok.decode([5, 6, 7, 8])
    'unaffable !'

The file reads: the two stages as plain functions (the reference); `Tokenizer`, the fast path, the
same steps through a per-character table and a per-word cache (tested against the reference and
HuggingFace); `train`, WordPiece's likelihood merges; vocab.txt. Whole corpora are data.py's job.
"""
# Annotations stay objects here (no `from __future__ import annotations`): the course's template
# (exercises/template.py) must carry the very signatures of basic_tokenize and wordpiece.
import hashlib
import heapq
import math
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm


@dataclass(frozen=True)
class WordPieceConfig:
    """Constants of BERT's tokenizer and of our trainer, with where they come from."""

    pad: str = "[PAD]"  # BERT vocab.txt line 0; padding token
    unk: str = "[UNK]"  # BERT vocab.txt line 100; a word WordPiece cannot split
    cls: str = "[CLS]"  # BERT vocab.txt line 101; starts every input (Devlin et al. 2019, Sec. 3)
    sep: str = "[SEP]"  # BERT vocab.txt line 102; ends each segment
    mask: str = "[MASK]"  # BERT vocab.txt line 103; the masked-LM input (ELECTRA's generator input)
    prefix: str = "##"  # BERT's continuation prefix: "##able" continues a word, "able" starts one
    # a longer word is one [UNK]: 200 in the official ELECTRA model/tokenization.py and BERT's
    # tokenization.py (HuggingFace's WordPiece tokenizers default to 100)
    max_input_chars_per_word: int = 200
    word_cache_size: int = 1 << 20  # our speed-up: remember the pieces of up to ~1M distinct words
    # trainer: a pair seen fewer times is never merged (HF BertWordPieceTokenizer.train default)
    min_frequency: int = 2
    # trainer: keep the most frequent characters (HF BertWordPieceTokenizer.train default)
    limit_alphabet: int = 1000
    vocab_size: int = 30522  # trainer default: the size of BERT's and ELECTRA's uncased vocab.txt
    # trainer: "likelihood" (likelihood_gain) or "ratio" (pair_score); see learn_vocab
    criterion: str = "likelihood"

    @property
    def specials(self) -> tuple[str, ...]:
        """Special tokens in the order the trainer writes them (as HF's trainer does)."""
        return (self.pad, self.unk, self.cls, self.sep, self.mask)


CONFIG = WordPieceConfig()


# ---------------------------------------------------------------------------------------------
# The reference: stage 1 (BasicTokenizer) one named function a step, then stage 2 (wordpiece).

# The blocks BERT splits into single characters (tokenization.py, _is_chinese_char). Not Hangul,
# Hiragana, Katakana: those scripts put spaces between words.
CJK_RANGES = (
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0x3400, 0x4DBF),  # Extension A
    (0x20000, 0x2A6DF),  # Extension B
    (0x2A700, 0x2B73F),  # Extension C
    (0x2B740, 0x2B81F),  # Extension D
    (0x2B820, 0x2CEAF),  # Extension E
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0x2F800, 0x2FA1F),  # CJK Compatibility Ideographs Supplement
)

# BERT counts every ASCII character that is neither a letter, a digit nor whitespace as punctuation
# ("^", "$", "`" are Unicode symbols, not punctuation, but BERT splits them too).
ASCII_PUNCTUATION = frozenset(chr(c) for c in range(33, 127) if not chr(c).isalnum())


def is_whitespace(ch: str) -> bool:
    """Space, tab, newline, CR or any Unicode space separator (Zs).

    >>> [is_whitespace(c) for c in " \\t\\u00a0x"]
    [True, True, True, False]
    """
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def is_control(ch: str) -> bool:
    """Any Unicode "other" character (Cc, Cf, Co, Cs, Cn), except tab/newline/CR, which are
    whitespace; so zero-width space U+200B and the byte-order mark U+FEFF (Cf) are controls and
    vanish.

    >>> [is_control(c) for c in "\\x07\\u200b\\n a"]
    [True, True, False, False, False]
    """
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


def is_punctuation(ch: str) -> bool:
    """Unicode punctuation (P*) or an ASCII non-alphanumeric symbol.

    >>> [is_punctuation(c) for c in "-$¿a€"]
    [True, True, True, False, False]
    """
    return ch in ASCII_PUNCTUATION or unicodedata.category(ch).startswith("P")


def is_cjk(ch: str) -> bool:
    """True for a CJK ideograph (the blocks in CJK_RANGES).

    >>> [is_cjk(c) for c in "中ひa"]
    [True, False, False]
    """
    return any(lo <= ord(ch) <= hi for lo, hi in CJK_RANGES)


def clean_text(text: str) -> str:
    """Drop U+FFFD (the replacement character) and controls (NUL among them); whitespace -> " ".

    >>> clean_text("a\\x00b\\tc\\u200bd\\ufffd")
    'ab cd'
    """
    kept = (ch for ch in text if ch != "\ufffd" and not is_control(ch))
    return "".join(" " if is_whitespace(ch) else ch for ch in kept)


def space_cjk(text: str) -> str:
    """Put a space on both sides of every CJK ideograph, so each is a word of its own.

    >>> space_cjk("中文ab")
    ' 中  文 ab'
    """
    return "".join(f" {ch} " if is_cjk(ch) else ch for ch in text)


def strip_accents(text: str) -> str:
    """Decompose (NFD) and drop the nonspacing marks (category Mn), i.e. the accents.

    >>> strip_accents("Café naïve")
    'Cafe naive'
    """
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")


def split_on_punctuation(word: str) -> list[str]:
    """Split a word so that every punctuation character stands alone.

    >>> split_on_punctuation("don't!!")
    ['don', "'", 't', '!', '!']
    """
    pieces: list[str] = []
    for ch in word:  # a new piece for punctuation, for the first character, and after punctuation
        if is_punctuation(ch) or not pieces or is_punctuation(pieces[-1][-1]):
            pieces.append(ch)
        else:
            pieces[-1] += ch
    return pieces


def basic_tokenize(text: str, lowercase: bool = True) -> list[str]:
    """Stage 1, BERT's BasicTokenizer (tokenization.py) on a text: the words WordPiece splits.

    The steps above in order. Like BERT it lowercases whole whitespace-separated words, so a
    word-final "Σ" becomes "ς".

    >>> basic_tokenize("Héllo, WORLD!! 中文")
    ['hello', ',', 'world', '!', '!', '中', '文']
    >>> basic_tokenize("Héllo, WORLD!!", lowercase=False)
    ['Héllo', ',', 'WORLD', '!', '!']
    """
    words = []
    for word in space_cjk(clean_text(text)).split():
        if lowercase:
            word = strip_accents(word.lower())
        words.extend(split_on_punctuation(word))
    # Deviation from HuggingFace's slow (Python) BasicTokenizer: it applies NFC to the text first.
    # The official BERT code and HF's Rust tokenizer do not, so the models never saw it. For an
    # uncased vocab the NFD in strip_accents makes it a no-op; it matters for cased vocabs only.
    # a word that was only accents (now empty) disappears, as in BERT
    return " ".join(words).split()


def wordpiece(word: str, vocab: dict[str, int] | set[str],
              config: WordPieceConfig = CONFIG) -> list[str]:
    """Stage 2, greedy longest-match-first WordPiece (BERT's WordpieceTokenizer.tokenize) on a word.

    Take the longest prefix in the vocab, then "##" pieces the same way; no match at some position,
    or over 200 characters, makes the whole word [UNK].

    >>> v = {"un", "##aff", "##able", "a", "##b"}
    >>> wordpiece("unaffable", v), wordpiece("ab", v), wordpiece("abc", v)
    (['un', '##aff', '##able'], ['a', '##b'], ['[UNK]'])
    """
    if len(word) > config.max_input_chars_per_word:
        return [config.unk]
    pieces = []
    start = 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else config.prefix + word[start:end]
            if piece in vocab:
                break
            end -= 1
        if end == start:
            return [config.unk]
        pieces.append(piece)
        start = end
    return pieces


# ---------------------------------------------------------------------------------------------
# The fast path: the same two stages, remembered: stage 1 through a str.translate table of what
# each character becomes, stage 2 once per distinct word.


class _CharTable(dict):
    """A str.translate table: code point -> stage 1 on that character, as a string to split on
    whitespace afterwards, built from the reference's steps the first time the character is seen.

    >>> table = _CharTable(lowercase=True)
    >>> [table[ord(c)] for c in ("É", "!", "中", "\\u200b", "\\t")]
    ['e', ' ! ', ' 中 ', '', ' ']

    Character by character equals basic_tokenize except where lowercasing or NFD looks beyond one
    character: Python's lower() of "Σ" depends on the letters around it (final sigma), and NFD
    re-orders combining marks by class, which can swap the few non-Mn marks that survive accent
    stripping. Texts containing such a character go through basic_tokenize; `hard` finds them.
    """

    # Why it is fast: str.translate maps the characters in C, and each distinct character goes
    # through the Python steps once: str.translate asks table[code], and the dict's __missing__
    # fills in a character the first time (all 1.1M code points up front would be slow to build).
    # bench/tokenizer.py measures it against basic_tokenize.

    def __init__(self, lowercase: bool):
        super().__init__()
        self.lowercase = lowercase
        # capital sigma: its lower() depends on the letters around it
        self.hard_chars = {"\u03a3"} if lowercase else set()
        self.hard = re.compile("[\u03a3]") if lowercase else None

    def __missing__(self, code: int) -> str:
        out = space_cjk(clean_text(chr(code)))
        if self.lowercase:
            out = strip_accents(out.lower())
        out = "".join(f" {c} " if is_punctuation(c) else c for c in out)
        self[code] = out
        if self.lowercase and any(unicodedata.combining(c) for c in out):
            self.hard_chars.add(chr(code))  # a non-Mn mark that NFD could move
            hard = "".join(re.escape(c) for c in sorted(self.hard_chars))
            self.hard = re.compile(f"[{hard}]")
        return out


class Tokenizer:
    """A BERT WordPiece tokenizer over a vocab (the tokens of vocab.txt, id = line number, special
    tokens included; examples in the module docstring). lowercase=True is BERT/ELECTRA uncased."""

    def __init__(self, tokens: list[str], lowercase: bool = True,
                 config: WordPieceConfig = CONFIG):
        self.config = config
        self.lowercase = lowercase
        self.id_to_token = list(tokens)
        # a repeated line: the last wins, as in HF
        self.vocab = {t: i for i, t in enumerate(self.id_to_token)}
        missing = [t for t in config.specials if t not in self.vocab]
        if missing:
            raise ValueError(
                f"the vocab has no {', '.join(missing)} line(s); a BERT vocab.txt needs all of "
                f"{', '.join(config.specials)} (train one with tokenizer.train or use a "
                f"BERT/ELECTRA vocab.txt)")
        self.pad_id = self.vocab[config.pad]
        self.unk_id = self.vocab[config.unk]
        self.cls_id = self.vocab[config.cls]
        self.sep_id = self.vocab[config.sep]
        self.mask_id = self.vocab[config.mask]
        self.special_tokens = frozenset(config.specials)
        self.special_ids = {self.vocab[t] for t in config.specials}
        self.table = _CharTable(lowercase)
        # longest first, as HF's trie matches
        specials = sorted(config.specials, key=len, reverse=True)
        self.special_split = re.compile("(" + "|".join(re.escape(t) for t in specials) + ")")
        self.word_ids: dict[str, tuple[int, ...]] = {}  # encode_word's cache

    @classmethod
    def load(cls, path: str | os.PathLike, lowercase: bool = True) -> "Tokenizer":
        """The tokenizer of a vocab.txt file (see read_vocab)."""
        return cls(read_vocab(path), lowercase=lowercase)

    def save(self, path: str | os.PathLike) -> None:
        """Write vocab.txt, atomically: a temporary file beside it first, then renamed over it, so
        the file at `path` is always whole, and a failed write leaves no temporary file behind."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        try:
            tmp.write_bytes(vocab_bytes(self.id_to_token))
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def hash(self) -> str:
        """sha256 of the vocab contents: equals `sha256sum vocab.txt` of the file `save` writes."""
        return hashlib.sha256(vocab_bytes(self.id_to_token)).hexdigest()

    def __len__(self) -> int:
        return len(self.id_to_token)

    def __reduce__(self):
        # pickled for worker processes without the table and the word cache: rebuilt there
        return type(self), (self.id_to_token, self.lowercase, self.config)

    def words(self, text: str) -> list[str]:
        """Stage 1 (basic_tokenize through the table): the words WordPiece splits.

        Special tokens written in the text (case-sensitive) are cut out first and kept whole, as
        HuggingFace does; the official BERT code would split "[SEP]" into "[", "sep", "]".

        >>> Tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]).words("Hi,[SEP]Zoë [sep]")
        ['hi', ',', '[SEP]', 'zoe', '[', 'sep', ']']
        """
        words = []
        for part in self.special_split.split(text):  # a special token is a part of its own
            if part in self.special_tokens:
                words.append(part)
                continue
            normalized = part.translate(self.table)  # first: new characters may add to table.hard
            # isascii() first: no hard character is ASCII, and isascii() reads a flag of the
            # string where the regex would scan it.
            hard = self.table.hard
            if hard is not None and not part.isascii() and hard.search(part):
                words.extend(basic_tokenize(part, self.lowercase))
            else:
                words.extend(normalized.split())
        return words

    def encode_word(self, word: str) -> tuple[int, ...]:
        """Stage 2 on one word (wordpiece) as ids, remembered: words follow Zipf's law, so most
        words of a text were seen before, and the longer the text, the more the cache saves."""
        ids = self.word_ids.get(word)
        if ids is None:
            if len(self.word_ids) >= self.config.word_cache_size:
                self.word_ids.clear()  # bounded memory; the frequent words come back at once
            ids = tuple(self.vocab[p] for p in wordpiece(word, self.vocab, self.config))
            self.word_ids[word] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, without [CLS]/[SEP]: stage 2 on each word of stage 1."""
        return [i for word in self.words(text) for i in self.encode_word(word)]

    def tokenize(self, text: str) -> list[str]:
        """WordPiece pieces of `text` (no [CLS]/[SEP])."""
        return [self.id_to_token[i] for i in self.encode(text)]

    def encode_pair(self, a: str, b: str | None = None,
                    max_len: int = 128) -> tuple[list[int], list[int]]:
        """[CLS] A [SEP] (B [SEP]) ids, at most max_len long, and segment ids (0 for A's part, 1
        for B's).

        Truncation is BERT's _truncate_seq_pair: drop the last token of the longer side (B on a tie)
        until it fits. E.g. max_len=7 leaves room for 4 of A's 4 and B's 3 tokens: A, B, then A lose
        their last token, giving [CLS] a1 a2 [SEP] b1 b2 [SEP].
        """
        room = max_len - (3 if b is not None else 2)
        if room < 0:
            raise ValueError(
                f"max_len={max_len} leaves no room for [CLS] and [SEP]; use max_len >= 3")
        ids_a = self.encode(a)
        ids_b = self.encode(b) if b is not None else []
        while len(ids_a) + len(ids_b) > room:
            (ids_a if len(ids_a) > len(ids_b) else ids_b).pop()
        ids = [self.cls_id, *ids_a, self.sep_id]
        if b is None:
            return ids, [0] * len(ids)
        return ids + [*ids_b, self.sep_id], [0] * len(ids) + [1] * (len(ids_b) + 1)

    def decode(self, ids: Iterable[int], skip_special: bool = False) -> str:
        """Join the pieces with spaces and glue "##" pieces to the one before (as BERT/HF do), so
        decode(encode(x)) == " ".join(basic_tokenize(x)) when no word became [UNK]."""
        ids = list(ids)
        bad = next((i for i in ids if not 0 <= i < len(self.id_to_token)), None)
        if bad is not None:
            raise ValueError(f"token id {bad} is not in the vocabulary "
                             f"(ids run from 0 to {len(self.id_to_token) - 1})")
        tokens = [self.id_to_token[i] for i in ids if not (skip_special and i in self.special_ids)]
        return " ".join(tokens).replace(" " + self.config.prefix, "").strip()


# ---------------------------------------------------------------------------------------------
# Trainer: WordPiece's likelihood criterion with incremental pair counts.


def count_words(texts: Iterable[str], lowercase: bool = True, config: WordPieceConfig = CONFIG,
                progress: bool = False) -> Counter:
    """How often each word (stage 1's output, special tokens left out) occurs.

    >>> count_words(["The cat, the hat."])
    Counter({'the': 2, 'cat': 1, ',': 1, 'hat': 1, '.': 1})
    """
    # stage 1 needs only the special tokens
    words = Tokenizer(config.specials, lowercase, config).words
    texts = tqdm(texts, desc="counting words", unit="text", disable=not progress)
    counts: Counter = Counter()
    for text in texts:
        counts.update(words(text))
    for t in config.specials:
        counts.pop(t, None)
    return counts


def likelihood_gain(count_ab: int, count_a: int, count_b: int, total: int) -> float:
    """WordPiece's merge criterion (Schuster and Nakajima 2012, Sec. 3.3: add the unit that
    "increases the likelihood on the training data the most"), learn_vocab's default:

        gain(a, b) = count(ab) * log( count(ab) * N / (count(a) * count(b)) )

    Under a unigram model over N units, each of the count(ab) occurrences that becomes one unit
    ab instead of a then b changes the log-likelihood by about log p(ab) - log p(a) - log p(b)
    = log(count(ab) N / (count(a) count(b))). N stays at its value before the first merge (the exact
    N shrinks a little with each merge; kept fixed, it lets the queue rescore only the pairs a merge
    touched). Example: "##u" follows "q" 10 times, q occurs 10 times, ##u 100 times, N = 1000, so
    the gain is 10 * log(10 * 1000 / (10 * 100)) = 10 * log(10):

    >>> round(likelihood_gain(10, 10, 100, total=1000), 2)
    23.03
    """
    return count_ab * math.log(count_ab * total / (count_a * count_b))


def pair_score(count_ab: int, count_a: int, count_b: int) -> float:
    """The "ratio" criterion, WordPiece's merge score as the HF course (ch. 6.6) teaches it:

        score(a, b) = count(ab) / (count(a) * count(b))

    It is likelihood_gain's gain *per occurrence* of the pair (up to the constant log N), so alone
    it prefers rare pairs: on real text it spends the vocab on rare words letter by letter. The
    same q, ##u example:

    >>> pair_score(10, 10, 100)
    0.01
    """
    return count_ab / (count_a * count_b)


def start_units(word_counts: dict[str, int], limit_alphabet: int, config: WordPieceConfig = CONFIG):
    """learn_vocab's start: the vocab before any merge, and each word as a list of units with its
    count.

    The vocab is the special tokens, the alphabet (the `limit_alphabet` most frequent characters,
    each as a word start "c"), then "##c" for each character seen inside a word. Each word becomes
    units: "hugs" -> ["h", "##u", "##g", "##s"]. Words with a character outside the alphabet, or
    over 200 characters, would be [UNK] anyway: left out.

    >>> vocab, words, freqs = start_units({"hug": 3, "bun": 1}, limit_alphabet=1000)
    >>> vocab[5:]
    ['b', 'g', 'h', 'n', 'u', '##g', '##n', '##u']
    >>> words, freqs
    ([['b', '##u', '##n'], ['h', '##u', '##g']], [1, 3])
    """
    char_counts: Counter = Counter()
    for word, n in word_counts.items():
        for ch in word:
            char_counts[ch] += n
    by_count = sorted(char_counts.items(), key=lambda kv: (-kv[1], kv[0]))  # ties: a-z
    alphabet = {ch for ch, _ in by_count[:limit_alphabet]}
    words = []
    freqs = []
    for word, n in sorted(word_counts.items()):
        if len(word) <= config.max_input_chars_per_word and all(ch in alphabet for ch in word):
            words.append([word[0]] + [config.prefix + ch for ch in word[1:]])
            freqs.append(n)
    vocab = list(dict.fromkeys(config.specials)) + sorted(alphabet)
    vocab += sorted({unit for units in words for unit in units[1:]})
    return vocab, words, freqs


def merge_units(units: list[str], a: str, b: str, merged: str) -> list[str]:
    """Replace every adjacent a, b in a word's units by the merged unit, left to right.

    >>> merge_units(["h", "##u", "##g", "##u", "##g"], "##u", "##g", "##ug")
    ['h', '##ug', '##ug']
    """
    out = []
    i = 0
    while i < len(units):
        if i + 1 < len(units) and units[i] == a and units[i + 1] == b:
            out.append(merged)
            i += 2
        else:
            out.append(units[i])
            i += 1
    return out


class PairCounts:
    """learn_vocab's counts, kept up to date merge by merge: how often each unit and each adjacent
    pair occurs (weighted by word counts), which words hold a pair, which pairs hold a unit."""

    def __init__(self, words: list[list[str]], freqs: list[int]):
        self.words = words
        self.freqs = freqs
        self.unit_count: Counter = Counter()
        self.pair_count: Counter = Counter()
        # pair -> words that contain (or once contained) it
        self.pair_words: dict[tuple[str, str], set[int]] = {}
        # unit -> pairs with a positive count it is part of
        self.unit_pairs: dict[str, set[tuple[str, str]]] = {}
        for w, (units, n) in enumerate(zip(words, freqs)):
            for u in units:
                self.unit_count[u] += n
            for pair in zip(units, units[1:]):
                self.pair_count[pair] += n
                self.pair_words.setdefault(pair, set()).add(w)
        for a, b in self.pair_count:
            self.unit_pairs.setdefault(a, set()).add((a, b))
            self.unit_pairs.setdefault(b, set()).add((a, b))

    def merge(self, pair: tuple[str, str], merged: str) -> set[tuple[str, str]]:
        """Merge `pair` in every word holding it; return the pairs whose score may have changed."""
        a, b = pair
        pair_delta: Counter = Counter()  # net change of each pair count over the touched words
        for w in self.pair_words.pop(pair):
            units = self.words[w]
            n = self.freqs[w]
            new_units = merge_units(units, a, b, merged)
            merges = len(units) - len(new_units)
            if merges == 0:
                continue  # the pair left this word in an earlier merge
            self.unit_count[a] -= merges * n
            self.unit_count[b] -= merges * n
            self.unit_count[merged] += merges * n
            for p in zip(units, units[1:]):
                pair_delta[p] -= n
            for p in zip(new_units, new_units[1:]):
                pair_delta[p] += n
                if merged in p:  # a pair new to this word always contains the merged unit
                    self.pair_words.setdefault(p, set()).add(w)
            self.words[w] = new_units
        changed = {p for p, d in pair_delta.items() if d != 0}  # d == 0: removed and added back
        for p in changed:
            c = self.pair_count[p] + pair_delta[p]
            self.pair_count[p] = c
            if c > 0:
                self.unit_pairs.setdefault(p[0], set()).add(p)
                self.unit_pairs.setdefault(p[1], set()).add(p)
            else:
                del self.pair_count[p]
                self.pair_words.pop(p, None)
                self.unit_pairs[p[0]].discard(p)
                self.unit_pairs[p[1]].discard(p)
        # scores change where a pair count changed, or a unit count: a and b went down, ab up
        return changed.union(self.unit_pairs.get(a, ()), self.unit_pairs.get(b, ()),
                             self.unit_pairs.get(merged, ()))


def learn_vocab(word_counts: dict[str, int], vocab_size: int, config: WordPieceConfig = CONFIG,
                progress: bool = False) -> list[str]:
    """The vocab (list of tokens) WordPiece learns from word counts: from start_units on, until
    vocab_size, merge the adjacent pair with the best score (likelihood_gain, or pair_score for
    criterion "ratio"; ties: the more frequent pair, then a-z) among pairs seen >= min_frequency
    times (the criterion, min_frequency and limit_alphabet are config's); the merged unit
    "h" + "##u" -> "hu" is a new token (if not one already). PairCounts keeps the counts up to
    date, and only pairs whose score changed get a new entry in the priority queue; stale entries
    are dropped when they come out. README.md's Tokenizer section compares this
    trainer with HuggingFace's and TF Text's.
    """
    criterion = config.criterion
    min_frequency = config.min_frequency
    limit_alphabet = config.limit_alphabet
    if criterion not in ("likelihood", "ratio"):
        raise ValueError(f"unknown criterion {criterion!r}: choose 'likelihood' or 'ratio'")
    vocab, words, freqs = start_units(word_counts, limit_alphabet, config)
    if vocab_size < len(vocab):
        raise ValueError(f"vocab_size={vocab_size} is smaller than the special tokens plus the "
                         f"alphabet ({len(vocab)} tokens); raise vocab_size or lower "
                         f"limit_alphabet")
    in_vocab = set(vocab)
    counts = PairCounts(words, freqs)
    total = sum(counts.unit_count.values())  # N of likelihood_gain, fixed at its starting value

    def entry(pair):  # the priority-queue entry: best score first, then the more frequent, then a-z
        c = counts.pair_count[pair]
        count_a = counts.unit_count[pair[0]]
        count_b = counts.unit_count[pair[1]]
        if criterion == "ratio":
            score = pair_score(c, count_a, count_b)
        else:
            score = likelihood_gain(c, count_a, count_b, total)
        return (-score, -c, pair)

    # A priority queue instead of scoring every pair before each merge: a merge pushes new entries
    # for the pairs it touched only, and an entry whose score changed since it was pushed (stale)
    # is skipped when it comes out. Rescoring every pair would cost time in proportion to the
    # number of pairs at every merge, and the pairs grow in number with the vocab.
    heap: list = []
    bar = tqdm(total=vocab_size, initial=len(vocab), desc="wordpiece merges", unit="tok",
               disable=not progress)
    while len(vocab) < vocab_size:
        # Stale entries pile up and slow every pop: over 4 entries per live pair (+ 1024, so a
        # small queue is not rebuilt over and over), rebuild the queue from the live pairs.
        if not heap or len(heap) > 4 * len(counts.pair_count) + 1024:
            heap = [entry(p) for p, c in counts.pair_count.items() if c >= min_frequency]
            heapq.heapify(heap)
            if not heap:
                break  # no pair left with min_frequency occurrences
        top = heapq.heappop(heap)
        pair = top[2]
        if counts.pair_count.get(pair, 0) < min_frequency or entry(pair) != top:
            continue  # stale: the pair's score changed since, and a fresh entry was pushed then
        merged = pair[0] + pair[1][len(config.prefix):]
        if merged not in in_vocab:
            in_vocab.add(merged)
            vocab.append(merged)
            bar.update(1)
        for p in counts.merge(pair, merged):
            if counts.pair_count.get(p, 0) >= min_frequency:
                heapq.heappush(heap, entry(p))
    bar.close()
    return vocab


def train(texts: Iterable[str], vocab_size: int = CONFIG.vocab_size, lowercase: bool = True,
          progress: bool = True, config: WordPieceConfig = CONFIG) -> Tokenizer:
    """Learn a WordPiece vocab from texts (see learn_vocab) and return its Tokenizer. The vocab can
    end smaller than vocab_size when no pair is left with config.min_frequency occurrences; the
    trainer's other settings are config's too (criterion, limit_alphabet).

    >>> tok = train(["low lower lowest"] * 3, vocab_size=23, progress=False)
    >>> tok.id_to_token[18:]  # merges in order: ##o+##w, l+##ow, low+##e, ##s+##t, lowe+##r
    ['##ow', 'low', 'lowe', '##st', 'lower']
    >>> tok.tokenize("lowest")
    ['lowe', '##st']
    """
    counts = count_words(texts, lowercase, config, progress)
    if not counts:
        raise ValueError(
            "no words to train on: the texts are empty (or only whitespace/control characters)")
    tokens = learn_vocab(counts, vocab_size, config, progress)
    return Tokenizer(tokens, lowercase=lowercase, config=config)


# ---------------------------------------------------------------------------------------------
# vocab.txt, BERT's format: UTF-8, one token a line, id = line number (from 0).


def read_vocab(path: str | os.PathLike) -> list[str]:
    """The tokens of a vocab.txt in id order (CRLF line ends, from editing on Windows, read as
    LF)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"no vocab file at {path}: pass the vocab.txt of a BERT/ELECTRA checkpoint")
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    return [line.rstrip("\r") for line in lines]


def vocab_bytes(tokens: list[str]) -> bytes:
    """The contents of vocab.txt: what Tokenizer.save writes and Tokenizer.hash hashes."""
    return "".join(t + "\n" for t in tokens).encode("utf-8")

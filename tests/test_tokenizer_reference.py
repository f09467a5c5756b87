"""tokenizer.py against HuggingFace: same tokens and ids on a few thousand varied lines.

The vocab is trained by HuggingFace `tokenizers` on the lines themselves (no download). References:
- transformers' pure-Python BERT tokenizer (`BertTokenizerLegacy`, the pre-v5 slow `BertTokenizer`,
  a port of the official BERT tokenization.py): must agree on every line;
- `tokenizers.BertWordPieceTokenizer` (Rust) and `transformers.BertTokenizer` (v5: Rust-backed):
  they lowercase character by character, so a word-final capital sigma becomes "σ" where Python's
  lower() (and so the official BERT code and ours) gives "ς". Replacing "Σ" by "σ" in the input
  removes that one difference, and then they must agree on every line too.
Each reference is set to the official per-word limit of 200 characters (HuggingFace's default is
100), which ours uses: words of 101-200 characters are pieces, longer ones [UNK], in all four.
"""
import random

import pytest
import transformers
from tokenizers import BertWordPieceTokenizer
from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

from tokenizer import Tokenizer

FRAGMENTS = [
    # ASCII words, numbers, punctuation inside words
    "The", "quick", "BROWN", "fox", "jumps", "over", "the", "lazy", "dog", "unaffable", "running",
    "2020", "3.14", "e-mail", "don't", "U.S.A.", "state-of-the-art", "C++", "x86_64",
    "snake_case", "CamelCase",
    # accents (composed and decomposed), ligatures, letters whose lowercase is longer or special
    "Café", "naïve", "Ångström", "Zoë", "ÉCOLE", "cafe\u0301", "Ñandú", "façade", "Øresund", "Łódź",
    "straße", "STRASSE", "İstanbul", "ﬁne", "Ⅻ", "½", "²", "µ", "ﬀ",
    # other scripts, with combining marks (Hebrew points, Devanagari and Thai vowel signs)
    "ΟΔΟΣ", "Σίσυφος", "σοφία", "ΣΑΣ.", "Москва", "Привет", "שָׁלוֹם", "مرحبا", "नमस्ते", "हिन्दी",
    "สวัสดี", "ქართული",
    # CJK ideographs (also compatibility and Extension B), kana and Hangul (not split per character)
    "中文字符", "日本語のテキスト", "カタカナ", "한국어", "\uf900\uf901",
    "\U00020000\U00020001", "漢字かな交じり文",
    # emoji: skin tone, ZWJ sequence, variation selector, flag; symbols
    "😀", "👍🏽", "👨\u200d👩\u200d👧", "❤️", "🇺🇸", "™", "©", "€100", "£5", "¥", "→", "∑", "≠",
    # controls, zero-width characters, odd whitespace
    "\x00", "\x07", "\x1b", "\u200b", "\u200d", "\ufeff", "\ufffd", "\x85", "\u2028", "\u00a0",
    "\u3000", "\t", "\r", "\x0b",
    # punctuation runs
    "!!!", "?!...", "—", "–", "«guillemets»", "¿Qué?", "¡Hola!", "$%^&*", "```", "...", "--",
    "(((nested)))", "'quoted'", '"double"', "@user", "#hashtag", "http://example.com/a?b=c&d=e",
    "~tilde~", "a|b", "<tag>", "{json: 1}",
    # very long words: 201 and 200 characters, 150, 102, 28
    "a" * 201, "b" * 200, "c" * 150, "supercalifragilisticexpialidocious" * 3,
    "antidisestablishmentarianism",
    # special tokens written in the text, alone, glued, lowercase, broken
    "[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "[cls]", "a[SEP]b", "[SEP][SEP]", "[MAS K]",
    "[[MASK]]", "x[UNK]y",
]
SEPARATORS = [" ", " ", " ", "", "\t", "  ", "\n"]
NUM_LINES = 3000


def varied_lines(n, seed=0):
    """n lines of 1-12 random fragments (a fifth of them shuffled) joined by random separators."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 12)):
            frag = rng.choice(FRAGMENTS)
            if rng.random() < 0.2:
                frag = "".join(rng.sample(frag, len(frag)))
            parts += [frag, rng.choice(SEPARATORS)]
        lines.append("".join(parts))
    return lines


MAX_CHARS = 200  # the official tokenization.py's max_input_chars_per_word


def with_official_word_limit(python_ref):
    """HuggingFace's slow BERT tokenizer with the official 200-character word limit."""
    python_ref.wordpiece_tokenizer.max_input_chars_per_word = MAX_CHARS
    return python_ref


@pytest.fixture(scope="module")
def lines():
    return varied_lines(NUM_LINES)


def vocab_from_hf_trainer(lines, folder, lowercase):
    """vocab.txt from HuggingFace's trainer; a small alphabet leaves some characters [UNK]."""
    trainer = BertWordPieceTokenizer(lowercase=lowercase)
    trainer.train_from_iterator(lines, vocab_size=1500, limit_alphabet=400, show_progress=False)
    trainer.save_model(str(folder))
    return folder / "vocab.txt"


@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
def test_same_tokens_and_ids_as_huggingface(lines, tmp_path, lowercase):
    vocab = vocab_from_hf_trainer(lines, tmp_path, lowercase)
    ours = Tokenizer.load(vocab, lowercase=lowercase)
    python_ref = with_official_word_limit(BertTokenizerLegacy(str(vocab),
                                                              do_lower_case=lowercase))
    rust_ref = BertWordPieceTokenizer(str(vocab), lowercase=lowercase)
    rust_ref._tokenizer.model.max_input_chars_per_word = MAX_CHARS
    transformers_ref = transformers.BertTokenizer(vocab=str(vocab), do_lower_case=lowercase)
    transformers_ref._tokenizer.model.max_input_chars_per_word = MAX_CHARS
    assert ours.config.max_input_chars_per_word == MAX_CHARS
    assert ours.id_to_token == list(python_ref.vocab)

    rust_lines = [line.replace("Σ", "σ") for line in lines]
    rust_out = rust_ref.encode_batch(rust_lines, add_special_tokens=False)
    transformers_out = transformers_ref(lines, add_special_tokens=False)["input_ids"]
    unks = 0
    for line, rust_line, rust_enc, transformers_ids in zip(lines, rust_lines, rust_out,
                                                           transformers_out):
        tokens, ids = ours.tokenize(line), ours.encode(line)
        assert ids == [ours.vocab[t] for t in tokens]
        # HF's slow tokenizer NFC-normalises first (see basic_tokenize); only cased cares
        if lowercase:
            assert tokens == python_ref.tokenize(line), repr(line)
            assert ids == python_ref.encode(line, add_special_tokens=False), repr(line)
        ids_rust_input = ours.encode(rust_line)
        assert ids_rust_input == rust_enc.ids, repr(line)
        if "Σ" not in line:
            assert ids == transformers_ids, repr(line)
        unks += ours.unk_id in ids
    # the vocab does leave some words [UNK], not all
    assert 0.05 * len(lines) < unks < 0.95 * len(lines)


def test_cased_equals_python_reference_on_nfc_text(lines, tmp_path):
    """Cased, HF's slow tokenizer differs from ours (and BERT's) only by its NFC step."""
    import unicodedata

    vocab = vocab_from_hf_trainer(lines, tmp_path, lowercase=False)
    ours = Tokenizer.load(vocab, lowercase=False)
    python_ref = with_official_word_limit(BertTokenizerLegacy(str(vocab), do_lower_case=False))
    nfc_lines = [line for line in lines if unicodedata.is_normalized("NFC", line)]
    assert len(nfc_lines) > len(lines) // 2
    for line in nfc_lines:
        assert ours.tokenize(line) == python_ref.tokenize(line), repr(line)


def test_encode_pair_equals_huggingface(lines, tmp_path):
    vocab = vocab_from_hf_trainer(lines, tmp_path, lowercase=True)
    ours = Tokenizer.load(vocab)
    python_ref = with_official_word_limit(BertTokenizerLegacy(str(vocab)))
    for a, b in zip(lines[:200:2], lines[1:200:2]):
        ids, segments = ours.encode_pair(a, b, max_len=24)
        ref = python_ref(a, b, max_length=24, truncation="longest_first",
                         return_token_type_ids=True)
        assert ids == ref["input_ids"] and segments == ref["token_type_ids"], (a, b)
        ids, segments = ours.encode_pair(a, max_len=24)
        ref = python_ref(a, max_length=24, truncation=True, return_token_type_ids=True)
        assert ids == ref["input_ids"] and segments == ref["token_type_ids"], a
    assert ours.decode(ours.encode(lines[0])) == python_ref.decode(
        python_ref.encode(lines[0], add_special_tokens=False), clean_up_tokenization_spaces=False)

"""Part 3's checks reject named wrong versions (exercises/check_tokenizer.py)."""
import unicodedata

import pytest
from test_exercises import rejects, solution

import tokenizer
from exercises import check_tokenizer as part
from exercises import harness

ASCII_PUNCTUATION = {chr(c) for c in [*range(33, 48), *range(58, 65), *range(91, 97),
                                      *range(123, 127)]}
PUNCTUATION = {  # which characters a version splits off
    "bert": lambda ch: ch in ASCII_PUNCTUATION or unicodedata.category(ch).startswith("P"),
    "unicode": lambda ch: unicodedata.category(ch).startswith("P"),  # misses $ ^ ` +
    "ascii": lambda ch: ch.isascii() and not ch.isalnum() and not ch.isspace(),  # misses ¿ « —
    "not alnum": lambda ch: not ch.isalnum(),  # splits € and © and accents too
    "none": lambda ch: False,
}


def _basic_tokenize_with(punctuation="bert", strip=True, form="NFD", cjk=True,
                         tab_is_control=False, drop_fffd=True, strip_when_cased=False,
                         always_lower=False, keep_empty=False):
    """Stage 1 written independently of tokenizer.py, with one mistake switched on at a time."""
    is_punct = PUNCTUATION[punctuation]

    def basic_tokenize(text, lowercase=True):
        kept = []
        for ch in text:
            control = unicodedata.category(ch).startswith("C") and (
                tab_is_control or ch not in "\t\n\r")
            if control or (drop_fffd and ch == "\ufffd"):
                continue
            kept.append(f" {ch} " if cjk and tokenizer.is_cjk(ch) else ch)
        words = []
        for word in "".join(kept).split():
            if lowercase or always_lower:
                word = word.lower()
            if (lowercase and strip) or strip_when_cased:
                word = "".join(c for c in unicodedata.normalize(form, word)
                               if unicodedata.category(c) != "Mn")
            if not word:
                words += [""] if keep_empty else []
                continue
            pieces = []
            for ch in word:
                if is_punct(ch) or not pieces or is_punct(pieces[-1][-1]):
                    pieces.append(ch)
                else:
                    pieces[-1] += ch
            words += pieces
        return words

    return basic_tokenize


def _wordpiece_with(shortest=False, partial=False, prefix=None, max_chars=None, hard_coded=False):
    def wordpiece(word, vocab, config=tokenizer.CONFIG):
        if hard_coded:  # "[UNK]", "##" and 200 written in, whatever config says
            config = tokenizer.CONFIG
        unk = config.unk
        pre = config.prefix if prefix is None else prefix
        limit = config.max_input_chars_per_word if max_chars is None else max_chars
        if len(word) > limit:
            return [unk]
        pieces, start = [], 0
        while start < len(word):
            ends = range(start + 1, len(word) + 1) if shortest else range(len(word), start, -1)
            piece = None
            for end in ends:
                cand = word[start:end] if start == 0 else pre + word[start:end]
                if cand in vocab:
                    piece = cand
                    break
            if piece is None:
                if partial:
                    return pieces + [unk]
                return [unk]
            pieces.append(piece)
            start = end
        return pieces

    return wordpiece


def _basic(**mistake):
    return part.check_basic_tokenize, solution(basic_tokenize=_basic_tokenize_with(**mistake))


def _wordpiece(**mistake):
    return part.check_wordpiece, solution(wordpiece=_wordpiece_with(**mistake))


WRONG = {
    "basic_tokenize: lowercases but keeps the accents": _basic(strip=False),
    "basic_tokenize: NFC instead of NFD": _basic(form="NFC"),
    "basic_tokenize: strips accents with lowercase=False too": _basic(strip_when_cased=True),
    "basic_tokenize: lowercases with lowercase=False too": _basic(always_lower=True),
    "basic_tokenize: punctuation not split": _basic(punctuation="none"),
    "basic_tokenize: ASCII punctuation only (str.isalnum)": _basic(punctuation="ascii"),
    "basic_tokenize: Unicode category P only ($ ^ ` + not split)": _basic(punctuation="unicode"),
    "basic_tokenize: every non-alphanumeric character split": _basic(punctuation="not alnum"),
    "basic_tokenize: CJK not split": _basic(cjk=False),
    "basic_tokenize: tab and newline dropped as controls": _basic(tab_is_control=True),
    "basic_tokenize: U+FFFD kept": _basic(drop_fffd=False),
    "basic_tokenize: an accent-only word left as ''": _basic(keep_empty=True),
    "wordpiece: shortest piece first": _wordpiece(shortest=True),
    "wordpiece: keeps the pieces before [UNK]": _wordpiece(partial=True),
    "wordpiece: no ## on continuations": _wordpiece(prefix=""),
    "wordpiece: 199-character limit": _wordpiece(max_chars=199),
    "wordpiece: 100-character limit (HuggingFace's default)": _wordpiece(max_chars=100),
    "wordpiece: no length limit": _wordpiece(max_chars=10 ** 9),
    "wordpiece: ignores config ([UNK], ## and 200 written in)": _wordpiece(hard_coded=True),
}


@pytest.mark.parametrize("name", WRONG)
def test_check_rejects(name):
    check, student = WRONG[name]
    rejects(check, student)


@pytest.mark.parametrize("check, student", [_basic(), _wordpiece()], ids=["basic", "wordpiece"])
def test_the_wrong_versions_without_their_mistake_pass(check, student):
    """Each wrong version above is rejected for its mistake, not for a slip in this file's code."""
    check(student)


def test_the_templates_wordpiece_defaults_to_the_projects_config_object():
    template = harness.load_student(harness.TEMPLATE, "template_for_config")
    assert harness.member(template, "wordpiece").__defaults__[0] is tokenizer.CONFIG

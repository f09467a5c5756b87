"""Part 3's checks reject named wrong versions (exercises/check_tokenizer.py)."""
import pytest
from test_exercises import rejects, solution

from exercises import check_tokenizer as part


def _wordpiece_with(shortest=False, partial=False, prefix="##", max_chars=100):
    def wordpiece(word, vocab):
        if len(word) > max_chars:
            return ["[UNK]"]
        pieces, start = [], 0
        while start < len(word):
            ends = range(start + 1, len(word) + 1) if shortest else range(len(word), start, -1)
            piece = None
            for end in ends:
                cand = word[start:end] if start == 0 else prefix + word[start:end]
                if cand in vocab:
                    piece = cand
                    break
            if piece is None:
                if partial:
                    return pieces + ["[UNK]"]
                return ["[UNK]"]
            pieces.append(piece)
            start = end
        return pieces

    return wordpiece


WRONG = {
    "wordpiece: shortest piece first": (part.check_wordpiece,
                                        solution(wordpiece=_wordpiece_with(shortest=True))),
    "wordpiece: keeps the pieces before [UNK]": (part.check_wordpiece,
                                                 solution(wordpiece=_wordpiece_with(partial=True))),
    "wordpiece: no ## on continuations": (part.check_wordpiece,
                                          solution(wordpiece=_wordpiece_with(prefix=""))),
    "wordpiece: 99-character limit": (part.check_wordpiece,
                                      solution(wordpiece=_wordpiece_with(max_chars=99))),
    "wordpiece: no length limit": (part.check_wordpiece,
                                   solution(wordpiece=_wordpiece_with(max_chars=10 ** 9))),
}


@pytest.mark.parametrize("name", WRONG)
def test_check_rejects(name):
    check, student = WRONG[name]
    rejects(check, student)

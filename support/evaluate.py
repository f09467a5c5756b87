"""Zero-shot evaluation: what a pre-trained model knows before any fine-tuning.

BLiMP (Warstadt et al. 2020) holds 67 paradigms of minimal pairs: a grammatical sentence and an
ungrammatical one that differ in one place ("Paula references Robert." / "Paula reference
Robert.").
A model is right on a pair when it scores the grammatical sentence higher; a tie counts half.
Four sentence scores, each over the sentence's own n tokens (never [CLS] or [SEP]):

    D sum     score_D(x) = sum_t log D(x, t)       D(x, t) = P(x_t is original)   (paper, Sec. 2)
    D mean    score_D(x) / n                       the length-normalised variant
    MLM PLL   PLL(x) = sum_t log p(x_t | x_\\t)     pseudo-log-likelihood (Salazar et al. 2020)
    Electric  sum_t -E(x)_t                        an Electric run's energies (electric.py)

x_\\t is x with token t replaced by [MASK]; p is ELECTRA's generator G, or the masked LM of the
BERT objective. D's scores and Electric's take one forward pass per sentence, the PLL one per
token; the results JSON has the seconds per pair of each. The zero point is the same config and
vocab with fresh weights (--random):

    python -m support.evaluate blimp --init out/                    # a train.py run folder
    python -m support.evaluate blimp --init out/ --random           # its zero point: fresh weights
    python -m support.evaluate blimp --init google/electra-small    # a released pair from the hub
    python -m support.evaluate blimp --random --vocab vocab.txt --size tiny

The file reads: the data (67 jsonl files, from --data-dir or downloaded once), the scores, the
accuracies, the model to score, then the command line.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from support import cli

if __name__ == "__main__":  # the flags first: torch takes seconds to load, a typo answers at once
    cli.evaluate_args(description=__doc__.split("\n\n")[0])

import torch
import torch.nn.functional as F
from tqdm import tqdm

from electra import Electra, ElectraConfig, get_config
from electric import Electric, pretraining_model, sentence_score
from support.hf import (
    TRAIN_CHECKPOINT,
    HubError,
    checkpoint_tokenizer,
    folder_tokenizer,
    from_hf_state_dicts,
    is_hub_name,
    load_electra,
    read_config,
    read_weights,
)
from support.plumbing import (
    DownloadError,
    atomic_write,
    download,
    load_checkpoint,
    pad_batch,
    previous_checkpoint,
)
from tokenizer import Tokenizer

# -----------------------------------------------------------------------------
# BLiMP's data: one jsonl file per paradigm, one minimal pair a line

# The data folder of the BLiMP repository (CC BY 4.0); $ELECTRA_BLIMP_URL (or --blimp-url) points
# elsewhere, e.g. a mirror or a test server. Paradigm NAME is {BLIMP_URL}/NAME.jsonl.
BLIMP_URL = os.environ.get("ELECTRA_BLIMP_URL",
                           "https://raw.githubusercontent.com/alexwarstadt/blimp/master/data")
BLIMP_CACHE = Path("cache") / "blimp"  # downloaded once, beside train.py's and glue.py's caches
# The 67 paradigms (BLiMP's UIDs), as the repository names their files, so that what to download
# is known without the network.
BLIMP_PARADIGMS = (
    "adjunct_island", "anaphor_gender_agreement", "anaphor_number_agreement",
    "animate_subject_passive", "animate_subject_trans", "causative", "complex_NP_island",
    "coordinate_structure_constraint_complex_left_branch",
    "coordinate_structure_constraint_object_extraction", "determiner_noun_agreement_1",
    "determiner_noun_agreement_2", "determiner_noun_agreement_irregular_1",
    "determiner_noun_agreement_irregular_2", "determiner_noun_agreement_with_adj_2",
    "determiner_noun_agreement_with_adj_irregular_1",
    "determiner_noun_agreement_with_adj_irregular_2",
    "determiner_noun_agreement_with_adjective_1", "distractor_agreement_relational_noun",
    "distractor_agreement_relative_clause", "drop_argument", "ellipsis_n_bar_1",
    "ellipsis_n_bar_2", "existential_there_object_raising", "existential_there_quantifiers_1",
    "existential_there_quantifiers_2", "existential_there_subject_raising",
    "expletive_it_object_raising", "inchoative", "intransitive",
    "irregular_past_participle_adjectives", "irregular_past_participle_verbs",
    "irregular_plural_subject_verb_agreement_1", "irregular_plural_subject_verb_agreement_2",
    "left_branch_island_echo_question", "left_branch_island_simple_question",
    "matrix_question_npi_licensor_present", "npi_present_1", "npi_present_2",
    "only_npi_licensor_present", "only_npi_scope", "passive_1", "passive_2",
    "principle_A_c_command", "principle_A_case_1", "principle_A_case_2", "principle_A_domain_1",
    "principle_A_domain_2", "principle_A_domain_3", "principle_A_reconstruction",
    "regular_plural_subject_verb_agreement_1", "regular_plural_subject_verb_agreement_2",
    "sentential_negation_npi_licensor_present", "sentential_negation_npi_scope",
    "sentential_subject_island", "superlative_quantifiers_1", "superlative_quantifiers_2",
    "tough_vs_raising_1", "tough_vs_raising_2", "transitive", "wh_island",
    "wh_questions_object_gap", "wh_questions_subject_gap",
    "wh_questions_subject_gap_long_distance", "wh_vs_that_no_gap",
    "wh_vs_that_no_gap_long_distance", "wh_vs_that_with_gap",
    "wh_vs_that_with_gap_long_distance",
)
# BLiMP's four fields are morphology, syntax, semantics and syntax_semantics; one paradigm
# (principle_A_case_2) spells the last "syntax/semantics". Read as one field, as the paper has it.
FIELD_SPELLINGS = {"syntax/semantics": "syntax_semantics"}
PER_PARADIGM = 200  # the first 200 of each paradigm's 1,000: 13,400 pairs, minutes on a CPU


@dataclass(frozen=True)
class MinimalPair:
    """One line of a BLiMP file."""
    good: str  # sentence_good: the grammatical sentence
    bad: str  # sentence_bad: the ungrammatical one
    field: str  # morphology, syntax, semantics or syntax_semantics
    paradigm: str  # UID: the paradigm (its file's name)


def download_blimp(cache_dir=BLIMP_CACHE, base_url: str = BLIMP_URL,
                   names: tuple[str, ...] = BLIMP_PARADIGMS) -> Path:
    """cache_dir holding NAME.jsonl for each paradigm, fetched once from {base_url}/NAME.jsonl.

    plumbing.download writes each file whole or not at all, so a file there is complete and a
    second call reads no network. A failure is a DownloadError that says what to do instead.
    """
    cache_dir = Path(cache_dir)
    missing = [n for n in names if not (cache_dir / f"{n}.jsonl").is_file()]
    if missing:
        print(f"downloading {len(missing)} BLiMP file(s) from {base_url} into {cache_dir} (once)")
    for name in missing:
        url = f"{base_url.rstrip('/')}/{name}.jsonl"
        try:
            download(url, cache_dir / f"{name}.jsonl", desc=name)
        except DownloadError as e:
            raise DownloadError(f"could not download BLiMP's {name}.jsonl from {url}: "
                                f"{e.reason or e}. Fetch the data folder of "
                                f"github.com/alexwarstadt/blimp another way and pass "
                                f"--data-dir FOLDER", e.reason) from None
    return cache_dir


def read_paradigm(path: Path, per_paradigm: int | None) -> list[MinimalPair]:
    """The first `per_paradigm` pairs of one BLiMP jsonl file (all of them when None)."""
    pairs = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if per_paradigm is not None and len(pairs) == per_paradigm:
                break
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                field = FIELD_SPELLINGS.get(row["field"], row["field"])
                pair = MinimalPair(row["sentence_good"], row["sentence_bad"], field, row["UID"])
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise ValueError(f"{path} line {number} is not a BLiMP pair ({type(e).__name__}: "
                                 f"{e}): a line holds sentence_good, sentence_bad, field and UID. "
                                 f"(A downloaded file: delete it to fetch it again)") from None
            pairs.append(pair)
    return pairs


def read_blimp(data_dir, per_paradigm: int | None) -> list[MinimalPair]:
    """The pairs of every .jsonl file in data_dir, by file name, `per_paradigm` from each."""
    files = sorted(Path(data_dir).glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"--data-dir {data_dir}: no .jsonl files there; pass the data "
                                f"folder of github.com/alexwarstadt/blimp (or leave --data-dir "
                                f"out to download it)")
    return [pair for f in files for pair in read_paradigm(f, per_paradigm)]


# -----------------------------------------------------------------------------
# Sentence scores. Each sentence is one row [CLS] x [SEP] (segment A), as in pre-training.

SCORES = ("d_sum", "d_mean", "mlm_pll", "electric")  # the scores, as the results JSON names them
SCORE_TITLES = {"d_sum": "D sum", "d_mean": "D mean", "mlm_pll": "MLM PLL", "electric": "Electric"}


def sentence_tokens(attention_mask: torch.Tensor) -> torch.Tensor:
    """[B, T] True at the sentence's own tokens of rows [CLS] x [SEP] + padding.

    >>> sentence_tokens(torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]]))
    tensor([[False,  True,  True, False],
            [False,  True, False, False]])
    """
    lengths = attention_mask.sum(1, keepdim=True)  # [B, 1] with [CLS] and [SEP]
    t = torch.arange(attention_mask.shape[1], device=attention_mask.device)  # [T]
    return (t >= 1) & (t < lengths - 1)  # [B, T]: after [CLS], before [SEP]


def d_scores(logits_D: torch.Tensor, attention_mask: torch.Tensor):
    """score_D(x) = sum_t log D(x, t), and score_D(x) / n: (sum [B], mean [B]).

    t runs over the n tokens of the sentence, not [CLS] or [SEP]. logits_D [B, T] are the logits
    of *original* (electra.Discriminator), so log D(x, t) = log sigmoid(logit). A logit of 0 is
    D(x, t) = 1/2, one of ln 3 is 3/4; [CLS] and [SEP] (logit 9 here) do not count:

    >>> import math
    >>> total, mean = d_scores(torch.tensor([[9.0, 0.0, math.log(3), 9.0]]), torch.ones(1, 4))
    >>> round(total.item(), 4), round(math.log(1 / 2 * 3 / 4), 4), round(mean.item(), 4)
    (-0.9808, -0.9808, -0.4904)
    """
    tokens = sentence_tokens(attention_mask)  # [B, T]
    log_d = F.logsigmoid(logits_D.float())  # [B, T]
    total = torch.where(tokens, log_d, 0.0).sum(1)  # [B]
    n = tokens.sum(1).clamp(min=1)  # [B]; an empty sentence scores 0
    return total, total / n


def masked_copies(rows: list[list[int]], mask_id: int):
    """x_\\t for every token t of every row [CLS] x [SEP]: (copies, t, x_t, the row of each).

    >>> masked_copies([[2, 7, 8, 3], [2, 9, 3]], mask_id=4)
    ([[2, 4, 8, 3], [2, 7, 4, 3], [2, 4, 3]], [1, 2, 1], [7, 8, 9], [0, 0, 1])
    """
    copies, positions, originals, owners = [], [], [], []
    for i, row in enumerate(rows):
        for t in range(1, len(row) - 1):  # the sentence's tokens, between [CLS] and [SEP]
            copies.append(row[:t] + [mask_id] + row[t + 1:])
            positions.append(t)
            originals.append(row[t])
            owners.append(i)
    return copies, positions, originals, owners


def pseudo_log_likelihood(mlm, rows: list[list[int]], mask_id: int, pad_id: int, device,
                          batch_size: int) -> torch.Tensor:
    """PLL(x) = sum_t log p(x_t | x_\\t) for each row [CLS] x [SEP]: [len(rows)] (float64).

    Salazar et al. 2020 (Sec. 2): mask each token in turn and add the log-probability the masked
    LM gives the original token there. `mlm` is an electra.Generator (G, or BERT's masked LM);
    the masked copies of all rows run `batch_size` at a time, each asking for logits at its one
    masked position only.
    """
    copies, positions, originals, owners = masked_copies(rows, mask_id)
    pll = torch.zeros(len(rows), dtype=torch.float64)
    for start in range(0, len(copies), batch_size):
        part = slice(start, start + batch_size)
        zeros = [[0] * len(c) for c in copies[part]]  # one segment
        x, segment_ids, attention_mask = pad_batch(copies[part], zeros, pad_id, device)  # [R, T]
        h = mlm.hidden_states(x, segment_ids, attention_mask)  # [R, T, H]
        m = torch.tensor(positions[part], device=device)[:, None]  # [R, 1]: the masked position
        logits = mlm.logits(h, m)[:, 0].float()  # [R, 1, V] -> [R, V]
        x_t = torch.tensor(originals[part], device=device)[:, None]  # [R, 1]
        log_p = logits.log_softmax(-1).gather(1, x_t)[:, 0]  # [R]
        pll.index_add_(0, torch.tensor(owners[part]), log_p.double().cpu())
    return pll


# -----------------------------------------------------------------------------
# Accuracy: a pair is right when the grammatical sentence scores higher; a tie counts half


def pair_credit(good: float, bad: float) -> float:
    """1 when score(good) > score(bad), 0 when lower, 1/2 on a tie.

    >>> pair_credit(-3.0, -4.0), pair_credit(-4.0, -3.0), pair_credit(-3.0, -3.0)
    (1.0, 0.0, 0.5)
    """
    if good == bad:
        return 0.5
    return 1.0 if good > bad else 0.0


def accuracies(pairs: list[MinimalPair], credits: dict[str, list[float]]) -> dict:
    """Mean credit per score, overall, per field and per paradigm:
    {"overall": {"pairs": N, score: acc}, "fields": {field: {...}}, "paradigms": {UID: {...}}}.

    >>> p = [MinimalPair("a", "b", "syntax", "u1"), MinimalPair("c", "d", "morphology", "u2")]
    >>> accuracies(p, {"d_sum": [1.0, 0.5]})["fields"]
    {'morphology': {'pairs': 1, 'd_sum': 0.5}, 'syntax': {'pairs': 1, 'd_sum': 1.0}}
    """
    def summary(indices: list[int]) -> dict:
        means = {s: sum(c[i] for i in indices) / len(indices) for s, c in credits.items()}
        return {"pairs": len(indices), **means}

    fields = defaultdict(list)  # field: the indices of its pairs
    paradigms = defaultdict(list)  # UID: the indices of its pairs
    for i, pair in enumerate(pairs):
        fields[pair.field].append(i)
        paradigms[pair.paradigm].append(i)
    by_paradigm = {u: {"field": pairs[ix[0]].field, **summary(ix)} for u, ix in paradigms.items()}
    return {"overall": summary(list(range(len(pairs)))),
            "fields": {f: summary(fields[f]) for f in sorted(fields)},
            "paradigms": by_paradigm}


@torch.inference_mode()
def blimp_credits(model: Electra, tok: Tokenizer, pairs: list[MinimalPair], batch_size: int,
                  device, score_mlm: bool = True, seconds: dict | None = None
                  ) -> tuple[dict[str, list[float]], int]:
    """Each pair's credit under each score the model has, and how many pairs tokenise the same.
    `seconds`, when given, gets each score's time in seconds (D's two scores share one pass).

    D's scores need a discriminator (ELECTRA), the PLL a masked LM (mlm_of); an Electric run has
    its energy sum (electric.sentence_score) and neither of those. Two sentences whose
    ids are the same (words the vocab does not have both read [UNK]) are a tie by definition,
    whatever the rounding of two forward passes. A sentence longer than the model's positions
    would be cut to fit (tokenizer.encode_pair); BLiMP's longest has 26 words, far below 512.
    """
    is_electric = isinstance(model, Electric)
    D = model.discriminator if not is_electric else None
    mlm = mlm_of(model) if score_mlm and not is_electric else None
    d_names = ["d_sum", "d_mean"] if D is not None else []
    names = d_names + (["mlm_pll"] if mlm is not None else []) + (["electric"] * is_electric)
    credits = {s: [] for s in names}
    clock = defaultdict(float)  # seconds per score
    identical = 0
    step = max(1, batch_size // 2)  # pairs per forward pass of D: two rows each
    with tqdm(total=len(pairs), unit="pair", desc="BLiMP", dynamic_ncols=True) as bar:
        for start in range(0, len(pairs), step):
            chunk = pairs[start:start + step]
            sentences = [s for p in chunk for s in (p.good, p.bad)]  # good, bad, good, bad, ...
            rows = [tok.encode_pair(s, max_len=model.config.max_position)[0] for s in sentences]
            scores = {}
            zeros = [[0] * len(r) for r in rows]
            if D is not None:
                t0 = time.perf_counter()
                x, segment_ids, attention_mask = pad_batch(rows, zeros, tok.pad_id, device)
                logits_D = D(x, segment_ids, attention_mask)  # [2P, T]
                total, mean = d_scores(logits_D, attention_mask)
                scores.update(d_sum=total.tolist(), d_mean=mean.tolist())
                clock["d_sum"] += time.perf_counter() - t0
                clock["d_mean"] = clock["d_sum"]
            if mlm is not None:
                t0 = time.perf_counter()
                pll = pseudo_log_likelihood(mlm, rows, tok.mask_id, tok.pad_id, device, batch_size)
                scores["mlm_pll"] = pll.tolist()
                clock["mlm_pll"] += time.perf_counter() - t0
            if is_electric:  # one pass: sum_t -E(x)_t over the sentence's tokens
                t0 = time.perf_counter()
                x, segment_ids, attention_mask = pad_batch(rows, zeros, tok.pad_id, device)
                energies = model.clean_energies(x, segment_ids, attention_mask)  # [2P, T]
                scores["electric"] = sentence_score(energies, sentence_tokens(attention_mask))
                scores["electric"] = scores["electric"].tolist()
                clock["electric"] += time.perf_counter() - t0
            for i in range(len(chunk)):
                same = rows[2 * i] == rows[2 * i + 1]
                identical += same
                for s in names:
                    good = scores[s][2 * i]
                    credits[s].append(0.5 if same else pair_credit(good, scores[s][2 * i + 1]))
            bar.update(len(chunk))
    if seconds is not None:
        seconds.update(clock)
    return credits, identical


# -----------------------------------------------------------------------------
# The model to score: a train.py run, a HuggingFace pair (hub or folder), or fresh weights


def mlm_of(model: Electra):
    """The masked LM whose PLL is scored: ELECTRA's generator G, or BERT's masked LM (D's size).
    (Electric's two-tower cloze model is no masked LM: blimp_credits does not ask for it.)"""
    return model.generator if model.generator is not None else model.mlm


@dataclass
class Scored:
    """A model to score and what came with it."""
    model: Electra
    tokenizer: Tokenizer
    source: str  # what was loaded, for the results JSON
    run_dir: Path | None  # a train.py run folder: where the results go by default
    score_mlm: bool = True  # False: an HF discriminator alone (its generator would be random)


def load_run(init: Path, vocab=None) -> Scored:
    """A train.py checkpoint (ckpt.pt, or the run folder holding it) as the whole Electra, G and D,
    rebuilt from its model_config and weights as train.py --export-hf does; the vocab.txt beside it
    (or `vocab`), checked against the checkpoint's vocab_hash. An unreadable ckpt.pt falls back to
    the previous one (plumbing.load_checkpoint)."""
    choices = "a train.py run folder (or its ckpt.pt), a HuggingFace ELECTRA folder or a hub name"
    if not init.exists():
        raise FileNotFoundError(f"--init {init} does not exist: pass {choices}")
    path = init / TRAIN_CHECKPOINT if init.is_dir() else init
    if not path.is_file() and not previous_checkpoint(path).is_file():
        raise FileNotFoundError(f"--init {init}: no {TRAIN_CHECKPOINT} there; pass {choices}")
    saved = load_checkpoint(path, "--init")
    try:
        config = ElectraConfig(**saved["model_config"])
        model = pretraining_model(config)  # Electra, or Electric for an Electric run
        model.load_state_dict(saved["model"])
    except (KeyError, TypeError, ValueError, RuntimeError) as e:
        raise ValueError(f"{path} is not a train.py checkpoint this electra.py can rebuild "
                         f"({type(e).__name__}: {e})") from None
    tok = checkpoint_tokenizer(path, config, saved.get("vocab_hash"), vocab)
    source = f"train.py checkpoint {path} (step {saved.get('step')})"
    return Scored(model, tok, source, path.parent)


def load_hf(init: str, generator=None, revision: str = "main", hub_cache_dir=None,
            vocab=None) -> Scored:
    """A released pair (a hub name, or a folder with discriminator/ and generator/) through
    hf.load_electra; an HF discriminator folder without a generator scores D alone. `vocab`
    replaces the discriminator's vocab.txt."""
    folder = Path(init)
    if not is_hub_name(init) and generator is None and (folder / "config.json").is_file():
        _, config = read_config(folder, ("electra",))
        tok, config = folder_tokenizer(folder, config, vocab)
        model = from_hf_state_dicts(config, read_weights(folder))
        source = f"HuggingFace discriminator {folder} (no generator)"
        return Scored(model, tok, source, None, score_mlm=False)
    model, disc_vocab = load_electra(init, generator, revision, hub_cache_dir)
    tok, _ = folder_tokenizer(disc_vocab.parent, model.config, vocab)
    where = f"{init} (revision {revision})" if is_hub_name(init) else f"HuggingFace pair {init}"
    return Scored(model, tok, where, None)


def is_hf(init: str) -> bool:
    """A hub name, an HF folder (config.json) or an --export-hf folder (discriminator/); else a
    train.py run."""
    folder = Path(init)
    exported = (folder / "discriminator" / "config.json").is_file()
    hf_folder = (folder / "config.json").is_file() or exported
    return is_hub_name(init) or hf_folder


def random_weights(config: ElectraConfig, seed: int) -> Electra:
    """Fresh weights of `config` drawn with torch seed `seed` (electra.init_weights, as
    pre-training starts): the zero point of a score."""
    torch.manual_seed(seed)
    return pretraining_model(config)


def load_scored(args: argparse.Namespace) -> Scored:
    """What --init (or --random with --vocab and --size) names; fresh weights under --random."""
    if args.init is None:
        tok = Tokenizer.load(args.vocab)
        try:
            config = get_config(args.size, vocab_size=len(tok), pad_id=tok.pad_id,
                                cls_id=tok.cls_id, sep_id=tok.sep_id, mask_id=tok.mask_id,
                                objective=args.objective)
        except ValueError as e:
            raise SystemExit(f"--objective {args.objective}: {e}") from None
        source = f"--size {args.size} --objective {args.objective} with {args.vocab}"
        scored = Scored(pretraining_model(config), tok, source, None)
    elif is_hf(args.init):
        scored = load_hf(args.init, args.generator, args.revision, args.hub_cache_dir, args.vocab)
    else:
        scored = load_run(Path(args.init), args.vocab)
    if args.random:
        scored.model = random_weights(scored.model.config, args.seed)
        scored.source = f"random weights (seed {args.seed}) of {scored.source}"
    return scored


# -----------------------------------------------------------------------------
# The command line

BATCH_SIZE = 256  # sequences per forward pass (D: 128 pairs; the MLM: masked copies)


def parse_args(argv=None) -> argparse.Namespace:
    """The command line (support.cli.evaluate_args), its defaults filled in from here."""
    args = cli.evaluate_args(argv, description=__doc__.split("\n\n")[0])
    defaults = dict(cache_dir=str(BLIMP_CACHE), blimp_url=BLIMP_URL, per_paradigm=PER_PARADIGM,
                    batch_size=BATCH_SIZE, device=cli.default_device())
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def format_table(results: dict) -> str:
    """The accuracies as a text table: overall, then one row per field; "-" for a score not run."""
    header = f"{'':<18}{'pairs':>8}" + "".join(f"{SCORE_TITLES[s]:>10}" for s in SCORES)
    rows = [("overall", results["overall"])] + list(results["fields"].items())
    lines = [header]
    for name, r in rows:
        cells = "".join(f"{r[s]:>10.3f}" if s in r else f"{'-':>10}" for s in SCORES)
        lines.append(f"{name:<18}{r['pairs']:>8,}{cells}")
    return "\n".join(lines)


def blimp(args: argparse.Namespace) -> dict:
    """python -m support.evaluate blimp ...: score, print the table, write the results JSON."""
    try:
        scored = load_scored(args)
        data_dir = args.data_dir or download_blimp(args.cache_dir, args.blimp_url)
        pairs = read_blimp(data_dir, args.per_paradigm or None)
    except (FileNotFoundError, ValueError, HubError, DownloadError) as e:
        raise SystemExit(f"error: {e}") from None
    if args.threads:
        torch.set_num_threads(args.threads)
    model = scored.model.to(args.device).eval()
    print(f"BLiMP on {scored.source}: {len(pairs):,} pairs from {data_dir}, on {args.device}")
    started = time.perf_counter()
    seconds = {}
    credits, identical = blimp_credits(model, scored.tokenizer, pairs, args.batch_size,
                                       args.device, scored.score_mlm, seconds)
    results = {"init": scored.source, "random": args.random, "seed": args.seed,
               "data": str(data_dir), "per_paradigm": args.per_paradigm or None,
               "identical_pairs": identical, "device": args.device,
               "threads": torch.get_num_threads(),
               "seconds": round(time.perf_counter() - started, 1),
               "seconds_per_pair": {s: t / max(len(pairs), 1) for s, t in seconds.items()},
               **accuracies(pairs, credits)}
    print(format_table(results))
    print("seconds per pair: " + ", ".join(f"{SCORE_TITLES[s]} {t:.2g}"
                                           for s, t in results["seconds_per_pair"].items()))
    print(f"chance is 0.500; {identical:,} pair(s) tokenise to the same ids (a tie each)")
    out = Path(args.out or scored.run_dir or Path("out") / "evaluate")
    name = f"blimp-random-seed{args.seed}.json" if args.random else "blimp.json"
    atomic_write(out / name, json.dumps(results, indent=2) + "\n")
    print(f"wrote {out / name} ({results['seconds']:.0f} s)")
    return results


def main(argv=None) -> dict:
    args = parse_args(argv)
    return blimp(args)


if __name__ == "__main__":
    main()

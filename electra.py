"""ELECTRA from scratch: the model, masking, sampling and losses of the paper, in plain PyTorch.

Clark, Luong, Le, Manning (2020). "ELECTRA: Pre-training Text Encoders as Discriminators Rather
Than Generators." arXiv:2003.10555. Section numbers below refer to that paper.

One pre-training step (Section 2, Figure 2), the official code's named steps:

    m        = mask_positions(x)                     positions to mask,      m_i ~ unif{1, n}
    x_masked = REPLACE(x, m, [MASK])                 mask_tokens()
    p_G      = generator(x_masked)                   only at the masked positions
    x_hat    ~ p_G                                   sample(), no gradient
    x_corrupt= REPLACE(x, m, x_hat)                  corrupt(), with D's labels 1(x_corrupt_t = x_t)
    D        = discriminator(x_corrupt)              D(x, t) = P(token t is original)
    L        = L_MLM + lam * L_Disc                  mlm_loss(), disc_loss(), electra_loss()

Conventions: shapes are written [B, T, H] = [batch, sequence, hidden]; K = the number of masked
slots per sequence (config.max_predictions); V = vocabulary size.

Section 3.2's alternatives follow the other objectives: what G and D share (SHARING), and
two-stage and adversarial training (ALGORITHMS; Appendix F's policy gradient, one function per
quantity).

Sign convention: the paper's D(x, t) is the probability that token t is *original*. The official
TensorFlow code and HuggingFace predict *replaced*. We follow the paper everywhere; support/hf.py's
checkpoint converters flip the sign of the last layer.
"""

import math
from dataclasses import dataclass, fields
from dataclasses import replace as dc_replace

import torch
import torch.nn as nn
import torch.nn.functional as F

# -----------------------------------------------------------------------------
# Configuration


@dataclass
class ElectraConfig:
    """The model's hyperparameters. The defaults are ELECTRA-Small's; check_config checks them."""

    # --- discriminator architecture (paper Table 6; official configure_pretraining.py) ---
    vocab_size: int = 30522  # BERT's uncased WordPiece (Sec. 3.1); set from the tokenizer
    embedding_size: int = 128  # Small projects 128 to hidden (Table 6, "Embedding Size")
    hidden_size: int = 256  # Table 6
    num_layers: int = 12  # Table 6
    num_heads: int = 4  # Table 6
    intermediate_size: int = 1024  # FFN inner size, Table 6
    max_position: int = 512  # BERT's position table; Small trains at seq 128 but keeps 512 rows
    type_vocab_size: int = 2  # segments A and B, as BERT
    dropout: float = 0.1  # hidden dropout, Table 6
    attention_dropout: float = 0.1  # attention-probability dropout, Table 6
    layer_norm_eps: float = 1e-12  # official modeling.py (BERT's TF LayerNorm epsilon)
    init_std: float = 0.02  # N(0, 0.02) init, official modeling.py initializer_range
    # --- generator (Section 3.2 "Smaller Generators", Table 6 "Generator Size") ---
    generator_fraction: float = 0.25  # G's hidden = fraction * D's hidden (Small: 1/4)
    generator_layers: float = 1.0  # G's depth / D's depth (official; 1.0 in every released model)
    # --- masking (Section 2; official pretrain_helpers.mask) ---
    mask_prob: float = 0.15  # k = round(mask_prob * n) masked (Sec. 2; Large: 0.25, Table 6)
    max_predictions: int = 19  # cap on k; official max_predictions_per_seq = 19 at seq 128
    mask_token_prob: float = 0.85  # masked positions made [MASK], the rest kept (mask_tokens)
    temperature: float = 1.0  # sampling temperature of p_G (official `temperature`, 1.0)
    lam: float = 50.0  # lambda in L = L_MLM + lambda * L_Disc (Sec. 2; official disc_weight)
    # Electric reads mask_prob as its NCE noise rate p, temperature as q's, lam as L_NCE's weight
    # --- objective ---
    objective: str = "electra"  # one of OBJECTIVES: ELECTRA, BERT (Table 1) or a Sec. 3.5 ablation
    # what G and D share (Sec. 3.2 "Weight Sharing"; official untied_generator and
    # untied_generator_embeddings; "gdes": DeBERTa-v3's, He et al. 2021, arXiv 2111.09543): one
    # of SHARING
    sharing: str = "embeddings"
    algorithm: str = "joint"  # how G and D are trained (Sec. 3.2, Appendix F): one of ALGORITHMS
    bert_mask_token_prob: float = 0.8  # BERT's 80/10/10 rule (Devlin et al. 2019, Sec. 3.1)
    bert_random_token_prob: float = 0.1  # BERT: 10% random token (and 10% unchanged)
    # --- implementation ---
    fast_attention: bool = True  # F.scaled_dot_product_attention; False = hand-written reference
    pad_id: int = 0  # special ids default to BERT's vocab; set them from the tokenizer
    cls_id: int = 101  # [CLS] in BERT's vocab
    sep_id: int = 102  # [SEP] in BERT's vocab
    mask_id: int = 103  # [MASK] in BERT's vocab


# The official code's shape rules, used for the generator (generator_config) and its FLOPs count
HEAD_SIZE = 64  # heads = hidden // 64 (BERT's and ELECTRA's head size)
FFN_RATIO = 4  # FFN inner size = 4 * hidden (Vaswani et al. 2017; BERT)

# Pre-training objectives. "electra" and "bert" are the paper's main comparison (Table 1); the
# other three are Section 3.5's efficiency ablations (Table 5). Electra.forward runs "electra";
# other_objective the rest.
OBJECTIVES = ("electra", "bert", "electra_15", "replace_mlm", "all_tokens_mlm")
# The objectives of sibling models, each in its own root file: Electric (electric.py), the
# energy-based cloze model of Clark et al. (EMNLP 2020)
SIBLING_OBJECTIVES = ("electric",)
# The objectives that train a discriminator (Electric's energy network is one, as in the official
# code); the others train a full-size masked LM instead.
WITH_DISCRIMINATOR = ("electra", "electra_15", "electric")

# Section 3.2's weight sharing. "embeddings": G and D share the token, position and segment
# embeddings (with their LayerNorm), the paper's choice and the official default
# (untied_generator True, untied_generator_embeddings False). "none": G has its own embeddings, as
# wide as its hidden size, as the official untied_generator_embeddings True builds them. "all": G
# is D's encoder with its own MLM head, as the official untied_generator False; G and D must then
# have the same shape. "gdes": DeBERTa-v3's gradient-disentangled embedding sharing (He, Gao, Chen
# 2021, arXiv 2111.09543): D reads G's token, position and segment tables through
# gdes_embedding, sg(E_G) + E_Delta, so that L_Disc trains only D's E_Delta and never pulls on G's
# tables (GdesEmbeddings); D's embedding LayerNorm is its own.
SHARING = ("none", "embeddings", "all", "gdes")
# Section 3.2's training algorithms: "joint" trains G and D together (L = L_MLM + lam L_Disc),
# "two-stage" trains G alone, then D alone initialised from G (two_stage_loss), "adversarial"
# trains G to fool D by policy gradient (Appendix F; adversarial_loss).
ALGORITHMS = ("joint", "two-stage", "adversarial")

# Model presets: each lists what differs from ElectraConfig's defaults, which are ELECTRA-Small's.
# small/base/large are the paper's (Table 6; official configure_pretraining.py). Training recipes
# (batch, lr, steps, sequence length) belong to train.py.
SIZES = {
    # ours, for a laptop CPU: Small's shape at half the width and a third of the depth, with 8,192
    # WordPiece tokens, as G's softmax and sampling cost O(V) per masked token. At the paper's
    # sampling values D stays near chance in a 10-minute CPU run, so G samples at temperature 2
    # (replacements D can learn to spot), 25% of the tokens are masked (as Large) and there is no
    # dropout: a short run does not overfit.
    "tiny": dict(vocab_size=8192, hidden_size=128, num_layers=4, num_heads=2,
                 intermediate_size=512, temperature=2.0, mask_prob=0.25, dropout=0.0,
                 attention_dropout=0.0),
    "small": {},
    "base": dict(embedding_size=768, hidden_size=768, num_heads=12, intermediate_size=3072,
                 generator_fraction=1 / 3),
    "large": dict(embedding_size=1024, hidden_size=1024, num_layers=24, num_heads=16,
                  intermediate_size=4096, mask_prob=0.25),
}


def get_config(size: str, **overrides) -> ElectraConfig:
    """The config for `size` (SIZES: "tiny", "small", "base", "large") with
    `overrides` applied, checked (check_config: a ValueError naming the field)."""
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}: choose one of {', '.join(SIZES)}")
    names = {f.name for f in fields(ElectraConfig)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(f"unknown config field(s) {unknown}: valid fields are {sorted(names)}")
    config = ElectraConfig(**{**SIZES[size], **overrides})
    check_config(config)
    return config


def generator_config(config: ElectraConfig) -> ElectraConfig:
    """The generator's config, derived from the discriminator's as the official code does
    (run_pretraining.get_generator_config). For the paper's presets (generator_layers 1: every layer
    kept) this scales hidden, heads and FFN by the fraction: Small 256/4/1024 -> 64/1/256, Base
    768/12/3072 -> 256/4/1024. The embedding size is kept, as the embeddings are shared (Section
    3.2), except under sharing "none".
    """
    hidden = int(round(config.hidden_size * config.generator_fraction))
    layers = int(round(config.num_layers * config.generator_layers))
    # untied embeddings are as wide as G's hidden size (official: embedding_size None)
    embedding = hidden if config.sharing == "none" else config.embedding_size
    return dc_replace(config, hidden_size=hidden, intermediate_size=FFN_RATIO * hidden,
                      num_heads=max(1, hidden // HEAD_SIZE), num_layers=layers,
                      embedding_size=embedding)


# The fields that make an encoder's shape: G and D must agree on them for --sharing all and for
# two-stage training, which copies G's weights into D.
SHAPE = ("hidden_size", "num_layers", "num_heads", "intermediate_size", "embedding_size")


def same_shape(config: ElectraConfig) -> list[str]:
    """The SHAPE fields where G (generator_config) differs from D, as "field G vs D"; [] if none."""
    g = generator_config(config)
    return [f"{f} {getattr(g, f)} vs {getattr(config, f)}" for f in SHAPE
            if getattr(g, f) != getattr(config, f)]


# -----------------------------------------------------------------------------
# The Transformer encoder (BERT's, post-LayerNorm)


class Embeddings(nn.Module):
    """Token + position + segment embeddings, LayerNorm, dropout (BERT). Shared by G and D
    (config.sharing "embeddings" or "all"; under "gdes" D reads G's through GdesEmbeddings)."""

    def __init__(self, config: ElectraConfig):
        super().__init__()
        self.word = nn.Embedding(config.vocab_size, config.embedding_size)
        self.position = nn.Embedding(config.max_position, config.embedding_size)
        self.segment = nn.Embedding(config.type_vocab_size, config.embedding_size)
        self.ln = nn.LayerNorm(config.embedding_size, eps=config.layer_norm_eps)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, input_ids, segment_ids):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)  # [T]
        e = self.word(input_ids) + self.position(pos) + self.segment(segment_ids)  # [B, T, E]
        return self.drop(self.ln(e))


def gdes_embedding(e_g, delta):
    """E_D = sg(E_G) + E_Delta                                                 (DeBERTa-v3, GDES)

    D's embedding table under gradient-disentangled embedding sharing: G's table E_G with the
    gradient stopped (sg), plus D's own E_Delta, which starts at zero. D reads what G has learnt,
    but L_Disc's gradient reaches E_Delta only, so G's L_MLM alone moves E_G: the two losses no
    longer pull the same vectors two ways. DeBERTa's code sets D's word and position tables to
    G's detached weights plus D's delta in a hook before each forward; here D computes it.
    e_g, delta: [rows, E] -> [rows, E].
    Example: e_g [[1., 2.]], delta [[0.5, 0.]] -> [[1.5, 2.]], whose gradient reaches delta alone.
    """
    return e_g.detach() + delta


class GdesEmbeddings(nn.Module):
    """D's embeddings under sharing "gdes": Embeddings' sum, with each of G's tables (token,
    position, segment) read through gdes_embedding and D's own E_Delta per table, then D's own
    LayerNorm and dropout. The LayerNorm is not shared: G's would take L_Disc's gradient. Both
    LayerNorms start as the identity and every E_Delta at zero, so at the start D's embeddings
    equal G's. merged() gives E_G + E_Delta as plain Embeddings: D's embeddings after training.
    """

    TABLES = ("word", "position", "segment")

    def __init__(self, config: ElectraConfig, g: Embeddings):
        super().__init__()
        # In a list, not a submodule: D reads G's tables without owning them, so D's parameters
        # and state dict hold E_Delta alone, and E_G stays G's
        self.g = [g]
        self.config = config
        for name in self.TABLES:
            table = getattr(g, name).weight
            self.register_parameter(f"{name}_delta", nn.Parameter(torch.zeros_like(table)))
        self.ln = nn.LayerNorm(config.embedding_size, eps=config.layer_norm_eps)
        self.drop = nn.Dropout(config.dropout)

    def tables(self) -> list[torch.Tensor]:
        """D's token, position and segment tables: sg(E_G) + E_Delta each."""
        return [gdes_embedding(getattr(self.g[0], name).weight, getattr(self, f"{name}_delta"))
                for name in self.TABLES]

    def forward(self, input_ids, segment_ids):
        word, position, segment = self.tables()
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)  # [T]
        e = (F.embedding(input_ids, word) + F.embedding(pos, position)
             + F.embedding(segment_ids, segment))
        return self.drop(self.ln(e))  # [B, T, E]

    @torch.no_grad()
    def merged(self) -> Embeddings:
        """E_G + E_Delta and D's LayerNorm as a plain Embeddings (fine-tuning, export)."""
        out = Embeddings(self.config).to(self.ln.weight.device)
        for name, table in zip(self.TABLES, self.tables()):
            getattr(out, name).weight.copy_(table)
        out.ln.load_state_dict(self.ln.state_dict())
        return out


class SelfAttention(nn.Module):
    """Multi-head self-attention, softmax(Q K^T / sqrt(d)) V, with a padding mask."""

    def __init__(self, config: ElectraConfig):
        super().__init__()
        self.n_head = config.num_heads
        self.fast = config.fast_attention
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)  # Q, K, V in one matmul
        self.out = nn.Linear(config.hidden_size, config.hidden_size)
        self.attn_drop = nn.Dropout(config.attention_dropout)

    def forward(self, h, keep):
        # h: [B, T, H]; keep: [B, 1, 1, T] bool, True where the key is a real (non-padding) token
        B, T, H = h.shape
        q, k, v = self.qkv(h).split(H, dim=-1)  # 3 x [B, T, H]
        # [B, T, H] -> [B, T, heads, d] -> [B, heads, T, d]
        q, k, v = (t.view(B, T, self.n_head, H // self.n_head).transpose(1, 2) for t in (q, k, v))
        if self.fast:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep,
                                               dropout_p=self.attn_drop.p if self.training else 0.0)
        else:
            y = attention_reference(q, k, v, keep, self.attn_drop)
        y = y.transpose(1, 2).reshape(B, T, H)  # [B, heads, T, d] -> [B, T, H]
        return self.out(y)


def attention_reference(q, k, v, keep, dropout: nn.Module):
    """Scaled dot-product attention written out (Vaswani et al. 2017, eq. 1): the reference that
    the fast path (F.scaled_dot_product_attention) is tested against.

    q, k, v: [B, heads, T, d]; keep: [B, 1, 1, T] bool (or [B, 1, T, T], a mask per query).
    Padding keys get the dtype's minimum score, not -inf, as BERT does: a row whose keys are all
    padding then stays finite instead of becoming NaN.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # [B, heads, T, T]
    scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
    return dropout(scores.softmax(dim=-1)) @ v  # [B, heads, T, d]


class Block(nn.Module):
    """A post-LayerNorm Transformer block (BERT): h = LN(h + Attn(h)); h = LN(h + FFN(h)),
    FFN(h) = fc2(GELU(fc1(h))) with GELU in its exact erf form, as BERT and the official code use.
    """

    def __init__(self, config: ElectraConfig):
        super().__init__()
        self.attn = SelfAttention(config)
        self.ln1 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.fc1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.fc2 = nn.Linear(config.intermediate_size, config.hidden_size)
        self.ln2 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, h, keep):
        h = self.ln1(h + self.drop(self.attn(h, keep)))
        return self.ln2(h + self.drop(self.fc2(F.gelu(self.fc1(h)))))


class Encoder(nn.Module):
    """The shared embeddings, this model's projection to its hidden size, and the blocks."""

    def __init__(self, config: ElectraConfig, embeddings: Embeddings | None = None):
        super().__init__()
        self.config = config
        self.embeddings = embeddings if embeddings is not None else Embeddings(config)
        # G and D have different hidden sizes but one embedding table (unless sharing "none"):
        # each projects it (Sec. 3.2)
        self.embeddings_project = (nn.Linear(config.embedding_size, config.hidden_size)
                                   if config.embedding_size != config.hidden_size else None)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.num_layers))

    def hidden_states(self, input_ids, segment_ids, attention_mask, keep=None):
        """input_ids, segment_ids, attention_mask: [B, T] -> the last layer's states [B, T, H].
        keep: which keys each query may attend to, [B, 1, T, T] bool (electric.py's one-sided
        towers); None: every real token, from attention_mask."""
        h = self.embeddings(input_ids, segment_ids)  # [B, T, E]
        if self.embeddings_project is not None:
            h = self.embeddings_project(h)  # [B, T, H]
        if keep is None:  # [B, T] -> [B, 1, 1, T], broadcast over heads and queries
            keep = attention_mask.bool()[:, None, None, :]
        for block in self.layers:
            h = block(h, keep)
        return h


class Generator(Encoder):
    """The generator G: a small masked language model (Section 2).

    p_G(x_t | x) = exp(e(x_t)^T h_G(x)_t) / sum_x' exp(e(x')^T h_G(x)_t)        (paper, Sec. 2)

    Head as the official code: dense -> GELU -> LayerNorm -> G's token embedding e (tied; D's too,
    unless sharing "none")
    + an output bias. Logits are computed only at the masked positions: a V-way softmax at every
    position would waste most of the step.
    """

    def __init__(self, config: ElectraConfig, embeddings: Embeddings | None = None):
        super().__init__(config, embeddings)
        self.head = nn.Linear(config.hidden_size, config.embedding_size)
        self.head_ln = nn.LayerNorm(config.embedding_size, eps=config.layer_norm_eps)
        self.output_bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, input_ids, segment_ids, attention_mask, m):
        """input_ids, segment_ids, attention_mask: [B, T]; m: [B, K] -> logits [B, K, V]."""
        return self.logits(self.hidden_states(input_ids, segment_ids, attention_mask), m)

    def logits(self, h, m):
        """h: [B, T, Hg] states; m: [B, K] positions -> logits [B, K, V] of p_G there."""
        h_m = h.gather(1, m[..., None].expand(-1, -1, h.shape[-1]))  # [B, K, Hg]
        z = self.head_ln(F.gelu(self.head(h_m)))  # [B, K, E]
        return z @ self.embeddings.word.weight.T + self.output_bias  # [B, K, V]


class Discriminator(Encoder):
    """The discriminator D: for each position t, the probability that x_t is original (Section 2).

    D(x, t) = sigmoid(w^T h_D(x)_t)                                              (paper, Sec. 2)

    Head as the official code: dense -> GELU -> dense to one logit (the paper writes only w; the
    extra dense layer is the official code's). forward() returns the logit of *original*.
    Electric (electric.py) reuses this module as its energy network, whose output is the energy
    E(x)_t instead (its module docstring gives that sign convention).
    """

    def __init__(self, config: ElectraConfig, embeddings: Embeddings | None = None):
        super().__init__(config, embeddings)
        self.head = nn.Linear(config.hidden_size, config.hidden_size)
        self.head_out = nn.Linear(config.hidden_size, 1)

    def forward(self, input_ids, segment_ids, attention_mask):
        h = self.hidden_states(input_ids, segment_ids, attention_mask)  # [B, T, H]
        return self.head_out(F.gelu(self.head(h))).squeeze(-1)  # [B, T, 1] -> [B, T]


def init_weights(module: nn.Module, std: float):
    """N(0, std) for matrices and embeddings, zero biases (official modeling.py; it uses a truncated
    normal, we use a plain normal as HuggingFace does). LayerNorm keeps torch's init, the identity.
    """
    for mod in module.modules():
        if isinstance(mod, (nn.Linear, nn.Embedding)):
            nn.init.normal_(mod.weight, std=std)
        if isinstance(mod, nn.Linear) and mod.bias is not None:
            nn.init.zeros_(mod.bias)


# -----------------------------------------------------------------------------
# The steps of pre-training, one function each (Section 2)


def _rng_kwargs(rng: torch.Generator | None) -> dict:
    """generator=rng for torch.rand/randint, or nothing (torch's global generator) when rng is None.
    Not generator=None: torch.compile rejects that once shapes are dynamic, as they become when a
    held-out batch is smaller than a training batch."""
    return {} if rng is None else {"generator": rng}


def mask_positions(x, attention_mask, config: ElectraConfig, rng: torch.Generator | None = None):
    """Choose the positions to mask: m_i ~ unif{1, n} for i = 1..k                 (paper, Sec. 2)

    Per sequence, k = max(1, min(max_predictions, round(mask_prob * n))) where n counts the
    non-padding tokens ([CLS] and [SEP] included, as the official pretrain_helpers.mask counts).
    Candidates are the tokens that are not [CLS], [SEP], [MASK] or padding.

    Deviation: the official code draws the k positions *with* replacement and so sometimes masks
    fewer than k; we draw k distinct positions (without replacement), which is what the paper says.

    Returns m: [B, K] long, K = min(max_predictions, T): positions in random order, all distinct
    within a row; m_valid: [B, K] bool, True for the first k slots of each row (the masked ones).
    The other slots point at unmasked positions and must be ignored.

    Example: n = 10 tokens -> k = round(1.5) = 2 (round half to even, as tf.round and torch.round).
    """
    B, T = x.shape
    K = min(config.max_predictions, T)
    candidate = candidates(x, attention_mask, config)  # [B, T]
    n = attention_mask.sum(dim=1).float()  # [B]
    k = torch.round(n * config.mask_prob).long().clamp(1, K)  # [B]
    k = torch.minimum(k, candidate.sum(dim=1))  # never more than there are candidates
    # A uniformly random order of the candidates: sort random keys, candidates first.
    u = torch.rand(B, T, device=x.device, **_rng_kwargs(rng))  # [B, T] in [0, 1)
    keys = u + (~candidate).float()  # [B, T], non-candidates > 1
    m = keys.argsort(dim=1)[:, :K]  # [B, K]
    m_valid = torch.arange(K, device=x.device)[None, :] < k[:, None]  # [B, K]
    return m, m_valid


def candidates(x, attention_mask, config: ElectraConfig):
    """[B, T] True at the tokens that may be masked (and that Electric's cloze loss counts): real
    tokens that are not [CLS], [SEP], [MASK] or padding, as the official
    pretrain_helpers.get_candidates_mask.

    >>> cfg = ElectraConfig(pad_id=0, cls_id=1, sep_id=2, mask_id=3)
    >>> candidates(torch.tensor([[1, 7, 3, 8, 2, 0]]), torch.tensor([[1, 1, 1, 1, 1, 0]]), cfg)
    tensor([[False,  True, False,  True, False, False]])
    """
    candidate = attention_mask.bool()
    for special in (config.cls_id, config.sep_id, config.mask_id, config.pad_id):
        candidate = candidate & (x != special)
    return candidate


def replace(x, m, values):
    """REPLACE(x, m, values): x with x[b, m[b, i]] := values[b, i]                  (paper, Sec. 2)

    x: [B, T]; m: [B, K] positions (distinct within a row); values: [B, K]. Returns a new tensor.
    Example: replace([[5, 6, 7]], [[2, 0]], [[9, 8]]) = [[8, 6, 9]].
    """
    return x.scatter(1, m, values)


def mask_tokens(x, m, m_valid, config: ElectraConfig, rng: torch.Generator | None = None):
    """x_masked = REPLACE(x, m, [MASK])                                              (paper, Sec. 2)

    As the official pretrain_helpers.mask: each masked position becomes [MASK] with probability
    mask_token_prob (0.85) and keeps its original token otherwise; ELECTRA never inserts
    random tokens.
    """
    x_m = x.gather(1, m)  # [B, K] the original tokens at the chosen positions
    u = torch.rand(m.shape, device=x.device, **_rng_kwargs(rng))  # [B, K]
    to_mask = m_valid & (u < config.mask_token_prob)
    return replace(x, m, torch.where(to_mask, torch.full_like(x_m, config.mask_id), x_m))


@torch.no_grad()
def sample(logits, temperature: float = 1.0, rng: torch.Generator | None = None):
    """x_hat_i ~ p_G(x_i | x_masked) for i in m                                      (paper, Sec. 2)

    logits: [..., V] -> token ids [...]. Sampled at `temperature` with the Gumbel-max trick, as the
    official sample_from_softmax: argmax(logits / temperature + g), g = -log(-log(u)), u ~ U(0, 1).
    No gradient: "we do not back-propagate the discriminator loss through the generator" (Sec. 2).
    """
    # g is computed in place: at [B, K, V] it is as large as G's logits, and each out-of-place
    # step would allocate and fill another such tensor. The clamps keep both logs finite (the
    # official code adds 1e-9 inside each log instead).
    g = torch.rand(logits.shape, device=logits.device, **_rng_kwargs(rng), dtype=torch.float32)
    g.clamp_min_(1e-9).log_().neg_()  # -log(u)
    g.clamp_min_(1e-9).log_().neg_()  # g = -log(-log(u))
    g += logits.float() / temperature
    return g.argmax(dim=-1)


def corrupt(x, m, m_valid, x_hat):
    """x_corrupt = REPLACE(x, m, x_hat);  is_original_t = 1(x_corrupt_t = x_t)       (paper, Sec. 2)

    D's input and its labels. A sample equal to the original counts as original: "if the
    generator happens to generate the correct token, that token is considered 'real' instead of
    'fake'" (Sec. 2). Only the used slots (m_valid) are replaced.
    x: [B, T]; m, m_valid, x_hat: [B, K] -> x_corrupt: [B, T], is_original: [B, T] bool.
    Example: x [[5, 6, 7]], m [[2, 1]], m_valid [[True, True]], x_hat [[9, 6]]: x_corrupt
    [[5, 6, 9]], is_original [[True, True, False]] (position 1 was sampled as its own token).
    """
    x_m = x.gather(1, m)  # [B, K] the original tokens at the masked positions
    x_corrupt = replace(x, m, torch.where(m_valid, x_hat, x_m))  # [B, T]
    return x_corrupt, x_corrupt == x


def _mean(values, where):
    """The mean of `values` over the positions where `where` is nonzero (0 if there are none)."""
    w = where.float()
    return (values.float() * w).sum() / w.sum().clamp_min(1.0)


def mlm_loss(logits, targets, m_valid):
    """L_MLM(x, theta_G) = E[ sum_{i in m} -log p_G(x_i | x_masked) ]               (paper, Sec. 2)

    Averaged over the masked positions of the batch, as the official code does.
    logits: [B, K, V]; targets: [B, K] the original tokens x_i; m_valid: [B, K] bool.
    """
    logits = logits.float().flatten(0, 1)  # [B, K, V] -> [B*K, V]
    nll = F.cross_entropy(logits, targets.flatten(), reduction="none")  # [B*K]
    return _mean(nll, m_valid.flatten())


def disc_loss(logits, is_original, weights):
    """L_Disc(x, theta_D) = E[ sum_{t=1}^n -1(x_corrupt_t = x_t) log D(x_corrupt, t)
                                 -1(x_corrupt_t != x_t) log(1 - D(x_corrupt, t)) ]  (paper, Sec. 2)

    with D = sigmoid(logits) the probability of *original*. Averaged over the tokens where
    `weights` is 1: for ELECTRA the attention mask, every non-padding token ([CLS] and [SEP]
    included) as the official code does; for the "ELECTRA 15%" ablation only the masked positions.
    logits: [B, T]; is_original: [B, T] bool; weights: [B, T].
    """
    bce = F.binary_cross_entropy_with_logits(logits.float(), is_original.float(), reduction="none")
    return _mean(bce, weights)


def electra_loss(l_mlm, l_disc, lam: float):
    """min_{theta_G, theta_D} sum_x L_MLM(x, theta_G) + lambda L_Disc(x, theta_D)  (paper, Sec. 2)
    """
    return l_mlm + lam * l_disc


# -----------------------------------------------------------------------------
# The whole model


@dataclass
class ElectraOutput:
    """One step's loss, its parts, and the tensors of its steps (None where an objective has no
    such step). What a run reports from them (G's and D's accuracy, D's AUC) is computed where it
    is reported, in support/report.py."""
    # L_MLM + lam * L_Disc (ELECTRA; adversarial: adversarial_loss + lam * L_Disc), L_MLM (BERT),
    # L_MLM + main_mlm_loss (Sec. 3.5); two-stage training ignores it: the loop takes one stage's
    # loss from the other fields (two_stage_loss)
    loss: torch.Tensor
    mlm_loss: torch.Tensor  # G's L_MLM (BERT: the full-size masked LM's)
    m: torch.Tensor  # [B, K] masked positions
    m_valid: torch.Tensor  # [B, K]
    x_masked: torch.Tensor  # [B, T]
    logits_G: torch.Tensor  # [B, K, V] G's logits at the masked positions (BERT: the masked LM's)
    x_corrupt: torch.Tensor | None = None  # [B, T] (None for BERT)
    logits_D: torch.Tensor | None = None  # [B, T] D's logit of *original* (None without a D)
    disc_loss: torch.Tensor | None = None  # L_Disc
    main_mlm_loss: torch.Tensor | None = None  # Replace MLM / All-Tokens MLM: the main model's loss

    @property
    def p_original(self) -> torch.Tensor | None:
        """D(x_corrupt, t) = sigmoid(logit): [B, T] the probability that each token is original."""
        return None if self.logits_D is None else torch.sigmoid(self.logits_D.detach().float())

    def is_original(self, x: torch.Tensor) -> torch.Tensor:
        """The labels L_Disc is trained against, [B, T] bool, True for *original*: x_corrupt_t ==
        x_t, a sample equal to the original counting as original. The logged metrics of D score
        it against these (support/report.py), so that they mean what the loss means."""
        return self.x_corrupt == x


class Electra(nn.Module):
    """Generator and discriminator trained jointly (objective "electra"), or one of the baselines
    the paper compares with through the same data and code: a BERT masked LM of the discriminator's
    size ("bert"), and the Section 3.5 ablations ("electra_15", "replace_mlm", "all_tokens_mlm").
    The modules an objective does not use are None.
    """

    def __init__(self, config: ElectraConfig):
        super().__init__()
        check_config(config)
        if config.objective in SIBLING_OBJECTIVES:
            raise ValueError(f"objective {config.objective!r} is {config.objective}.py's model, "
                             f"not Electra's")
        self.config = config
        obj = config.objective
        has_d = obj in WITH_DISCRIMINATOR
        self.embeddings = Embeddings(config)  # one module, the same Parameters in G and D
        g_config = generator_config(config)
        g_embeddings = Embeddings(g_config) if config.sharing == "none" else self.embeddings
        self.generator = Generator(g_config, g_embeddings) if obj != "bert" else None
        # gdes: self.embeddings is G's; D reads it through its own E_Delta (GdesEmbeddings)
        d_embeddings = (GdesEmbeddings(config, self.embeddings) if config.sharing == "gdes"
                        else self.embeddings)
        self.discriminator = Discriminator(config, d_embeddings) if has_d else None
        if config.sharing == "all":  # G runs D's encoder: the same modules, G keeps its own head
            self.generator.embeddings_project = self.discriminator.embeddings_project
            self.generator.layers = self.discriminator.layers
        self.mlm = Generator(config, self.embeddings) if not has_d else None  # D's size, G's head
        self.copy_head = nn.Linear(config.hidden_size, 1) if obj == "all_tokens_mlm" else None
        # Appendix F's learned baseline b = -log sigmoid(w^T h_G): w alone, no bias, as written
        self.baseline_w = (nn.Linear(g_config.hidden_size, 1, bias=False)
                           if config.algorithm == "adversarial" else None)
        init_weights(self, config.init_std)

    def forward(self, input_ids, segment_ids, attention_mask,
                rng: torch.Generator | None = None,
                temperature: float | None = None) -> ElectraOutput:
        """One pre-training step: Section 2's steps in the module docstring's order, then the loss.
        The other objectives (BERT, Section 3.5's ablations) run in other_objective.

        temperature: G's sampling temperature, x_hat ~ softmax(logits / temperature); None:
        config.temperature, the one training uses. Evaluation passes 1.0, the paper's, to measure
        D against G's untempered samples (report.evaluate_heldout's context AUC): a D trained on
        tempered samples can separate them by their rarity alone, without reading the context.
        """
        cfg = self.config
        if cfg.objective != "electra":
            return other_objective(self, input_ids, segment_ids, attention_mask, rng, temperature)
        x = input_ids
        m, m_valid = mask_positions(x, attention_mask, cfg, rng)  # [B, K]
        x_masked = mask_tokens(x, m, m_valid, cfg, rng)  # [B, T]
        h_G = self.generator.hidden_states(x_masked, segment_ids, attention_mask)  # [B, T, Hg]
        logits_G = self.generator.logits(h_G, m)  # [B, K, V]
        temperature = cfg.temperature if temperature is None else temperature
        x_hat = sample(logits_G, temperature, rng)
        x_m = x.gather(1, m)  # [B, K] the original tokens at the masked positions
        x_corrupt, is_original = corrupt(x, m, m_valid, x_hat)  # [B, T] each
        logits_D = self.discriminator(x_corrupt, segment_ids, attention_mask)  # [B, T]
        l_mlm = mlm_loss(logits_G, x_m, m_valid)
        l_disc = disc_loss(logits_D, is_original, attention_mask)
        loss = electra_loss(l_mlm, l_disc, cfg.lam)
        # two-stage: computed as joint; train.py's loop keeps one stage's part (two_stage_loss)
        if cfg.algorithm == "adversarial":  # G's L_MLM replaced by Appendix F's objective
            loss = adversarial_loss(self, h_G, m, m_valid, logits_G, x_hat, x_m, logits_D,
                                    temperature) + cfg.lam * l_disc
        return ElectraOutput(loss=loss, mlm_loss=l_mlm,
                             disc_loss=l_disc, m=m, m_valid=m_valid, x_masked=x_masked,
                             logits_G=logits_G, x_corrupt=x_corrupt, logits_D=logits_D)

    @torch.no_grad()
    def p_original(self, input_ids, segment_ids, attention_mask):
        """D(x, t) for every token: [B, T] probabilities that each token is original."""
        return torch.sigmoid(self.discriminator(input_ids, segment_ids, attention_mask).float())

    def fine_tuning_encoder(self) -> Encoder:
        """The full-size encoder fine-tuning starts from, without its pre-training head: D's
        (ELECTRA, ELECTRA 15%) or the full-size masked LM's (BERT, Replace MLM, All-Tokens MLM).
        """
        trained = self.discriminator if self.discriminator is not None else self.mlm
        return encoder_of(trained, self.config)


def encoder_of(trained: nn.Module, config: ElectraConfig) -> Encoder:
    """A fresh Encoder holding a trained tower's encoder weights, its pre-training head left out:
    the state-dict entries whose names an Encoder has (plain_state_dict: D's merged embeddings
    under sharing "gdes")."""
    encoder = Encoder(config)
    wanted = encoder.state_dict()
    encoder.load_state_dict({k: v for k, v in plain_state_dict(trained).items() if k in wanted})
    return encoder


def plain_state_dict(tower: Encoder) -> dict:
    """A tower's state dict as a plain Encoder names it: under sharing "gdes", D's embeddings are
    merged, E_G + E_Delta (GdesEmbeddings.merged), never E_Delta alone; other towers as they are.
    """
    state = tower.state_dict()
    if isinstance(tower.embeddings, GdesEmbeddings):
        state = {k: v for k, v in state.items() if not k.startswith("embeddings.")}
        state |= {f"embeddings.{k}": v for k, v in tower.embeddings.merged().state_dict().items()}
    return state


# -----------------------------------------------------------------------------
# The other objectives: the BERT baseline (Table 1) and Section 3.5's ablations (Table 5)


def other_objective(model: Electra, x, segment_ids, attention_mask, rng, temperature
                    ) -> ElectraOutput:
    """Electra.forward for the objectives other than "electra", through the same steps:

    - bert: BERT's 80/10/10 masking (bert_mask_tokens) and a masked LM of D's size in G's place;
      the step stops at L_MLM.
    - electra_15: "identical to ELECTRA except the discriminator loss only comes from the 15% of
      the tokens that were masked out of the input" (Sec. 3.5).
    - replace_mlm: "the same as masked language modeling except instead of replacing masked-out
      tokens with [MASK], they are replaced with tokens from a generator model"; a full-size masked
      LM reads x_corrupt and predicts the original tokens at the masked positions.
    - all_tokens_mlm: that masked LM predicts the identity of every token, with a copy mechanism
      (all_tokens_mlm_loss).
    The two MLM ablations add their loss to G's L_MLM without lambda: both are log-likelihoods over
    a vocabulary.
    """
    cfg = model.config
    m, m_valid = mask_positions(x, attention_mask, cfg, rng)  # [B, K]
    x_m = x.gather(1, m)  # [B, K]
    if cfg.objective == "bert":
        x_masked = bert_mask_tokens(x, m, m_valid, cfg, rng)  # [B, T]
        logits = model.mlm(x_masked, segment_ids, attention_mask, m)  # [B, K, V]
        l_mlm = mlm_loss(logits, x_m, m_valid)
        return ElectraOutput(loss=l_mlm, mlm_loss=l_mlm, m=m, m_valid=m_valid, x_masked=x_masked,
                             logits_G=logits)
    x_masked = mask_tokens(x, m, m_valid, cfg, rng)  # [B, T]
    logits_G = model.generator(x_masked, segment_ids, attention_mask, m)  # [B, K, V]
    x_hat = sample(logits_G, cfg.temperature if temperature is None else temperature, rng)
    x_corrupt, is_original = corrupt(x, m, m_valid, x_hat)  # [B, T] each
    l_mlm = mlm_loss(logits_G, x_m, m_valid)
    steps = dict(mlm_loss=l_mlm, m=m, m_valid=m_valid, x_masked=x_masked, logits_G=logits_G,
                 x_corrupt=x_corrupt)
    if cfg.objective == "electra_15":
        logits_D = model.discriminator(x_corrupt, segment_ids, attention_mask)  # [B, T]
        # L_Disc over the masked positions only: weight 1 there, 0 elsewhere
        weights = torch.zeros_like(attention_mask).scatter(1, m, m_valid.to(attention_mask.dtype))
        l_disc = disc_loss(logits_D, is_original, weights)
        return ElectraOutput(loss=electra_loss(l_mlm, l_disc, cfg.lam), disc_loss=l_disc,
                             logits_D=logits_D, **steps)
    h = model.mlm.hidden_states(x_corrupt, segment_ids, attention_mask)  # [B, T, H]
    if cfg.objective == "replace_mlm":
        l_main = mlm_loss(model.mlm.logits(h, m), x_m, m_valid)
    else:  # all_tokens_mlm
        B, T = x.shape
        every = torch.arange(T, device=x.device).expand(B, -1)  # [T] -> [B, T] all positions
        copy_logits = model.copy_head(h).squeeze(-1)  # [B, T, 1] -> [B, T]
        l_main = all_tokens_mlm_loss(model.mlm.logits(h, every), copy_logits, x_corrupt, x,
                                     attention_mask)
    return ElectraOutput(loss=l_mlm + l_main, main_mlm_loss=l_main, **steps)


def bert_mask_tokens(x, m, m_valid, config: ElectraConfig, rng: torch.Generator | None = None):
    """BERT's masking (Devlin et al. 2019, Sec. 3.1): of the chosen positions 80% become [MASK],
    10% a random token, 10% keep the original. The baseline of the paper's Table 1."""
    x_m = x.gather(1, m)  # [B, K]
    u = torch.rand(m.shape, device=x.device, **_rng_kwargs(rng))
    random_ids = torch.randint(0, config.vocab_size, m.shape, device=x.device, **_rng_kwargs(rng))
    keep_or_random = torch.where(u < config.bert_mask_token_prob + config.bert_random_token_prob,
                                 random_ids, x_m)
    values = torch.where(u < config.bert_mask_token_prob, torch.full_like(x_m, config.mask_id),
                         keep_or_random)
    return replace(x, m, torch.where(m_valid, values, x_m))


def all_tokens_mlm_loss(logits, copy_logits, x_corrupt, x, attention_mask):
    """The All-Tokens MLM ablation's loss (Section 3.5, Table 5).

    The model predicts the identity of *every* token of x_corrupt, not only the masked ones, with
    the paper's explicit copy mechanism: a sigmoid layer gives a copy probability D_t, and
        p(x_t | x_corrupt) = D_t * 1(x_corrupt_t = x_t) + (1 - D_t) * p_MLM(x_t | x_corrupt)
    Loss: the mean of -log p(x_t | x_corrupt) over the non-padding tokens, computed in log space.
    logits: [B, T, V]; copy_logits: [B, T]; x_corrupt, x, attention_mask: [B, T].
    """
    log_p_mlm = logits.float().log_softmax(-1).gather(-1, x[..., None]).squeeze(-1)  # [B, T]
    log_copy = F.logsigmoid(copy_logits.float())  # [B, T] log D_t
    log_no_copy = F.logsigmoid(-copy_logits.float())  # [B, T] log(1 - D_t)
    # log(D_t + (1 - D_t) p_MLM) where the token is unchanged,
    # log((1 - D_t) p_MLM) where it was replaced
    log_p = torch.where(x_corrupt == x, torch.logaddexp(log_copy, log_no_copy + log_p_mlm),
                        log_no_copy + log_p_mlm)
    return -_mean(log_p, attention_mask)


# -----------------------------------------------------------------------------
# Section 3.2's other training algorithms: two-stage, and adversarial (Appendix F)


def two_stage_loss(out: ElectraOutput, stage: int) -> torch.Tensor:
    """Section 3.2's two-stage training, the loss of each stage:

        1. "Train only the generator with L_MLM for n steps."                L = L_MLM
        2. "Initialize the weights of the discriminator with the weights of the generator. Then
           train the discriminator with L_Disc for n steps, keeping the generator's weights
           frozen."                                                          L = L_Disc
    Each stage's loss reaches only its own model: L_Disc has no path to G (the samples carry no
    gradient) and, with nothing shared (check_config), G stays frozen; L_MLM none to D. Frozen
    also under AdamW's momentum and weight decay: train.py's loop sets the frozen model's
    gradients to None (drop_frozen_gradients), as a compiled backward fills them with zeros.
    Stage 2's L_Disc has no lam: lam weighs L_Disc against L_MLM, and D trains alone. G samples as
    in joint training, with its dropout on (the paper does not say).
    """
    return out.mlm_loss if stage == 1 else out.disc_loss


def drop_frozen_gradients(model: Electra, stage: int) -> None:
    """Two-stage training, after backward and before the clip and the optimizer's step: the
    gradients of the model the stage keeps frozen (D in stage 1, G in stage 2) set to None.

    AdamW skips a parameter without a gradient: no update, no weight decay, no state. A zero
    gradient would still move it, by the momentum it kept and by the decoupled weight decay.
    Eager autograd alone gives None there, since the stage's loss never reaches the frozen model;
    torch.compile's backward returns a gradient for every parameter, zeros for those.
    """
    frozen = model.discriminator if stage == 1 else model.generator
    for p in frozen.parameters():
        p.grad = None


@torch.no_grad()
def init_discriminator_from_generator(model: Electra) -> None:
    """Two-stage training's switch: D's encoder := G's (embeddings, projection, blocks). D's head
    keeps its initialisation: G's is an MLM head, not a binary classifier. The paper notes that
    without this initialisation D "would sometimes fail to learn at all beyond the majority
    class, perhaps because the generator started so far ahead of the discriminator" (Sec. 3.2).
    """
    D = model.discriminator.state_dict()
    for name, value in model.generator.state_dict().items():
        if name in D and not name.startswith("head"):
            D[name].copy_(value)


def reward(logits_D, is_original):
    """R(x_hat_t, x) = -log D(x_hat_t | x_masked)        if x_hat_t = x_t
                     = -log(1 - D(x_hat_t | x_masked))  otherwise                  (Appendix F)

    D's loss at a masked position: adversarial G is rewarded for what D gets wrong.
    D(x_hat_t | x_masked) is the appendix's shorthand for D(x_corrupt, t), D reading the corrupted
    input. D is the probability of *original*, as in the paper and in our logits_D (the official
    code and HF score *replaced*, which would swap the two cases). No gradient: to G a reward is
    a number.
    logits_D, is_original: [B, K] at the masked positions -> [B, K].
    Example: D = 0.8 -> R = -log 0.8 = 0.223 for a sample equal to the original, -log 0.2 = 1.609
    for a replacement.
    """
    return F.binary_cross_entropy_with_logits(logits_D.detach().float(), is_original.float(),
                                              reduction="none")


def baseline(s):
    """b(x_masked, t) = -log sigmoid(w^T h_G(x_masked)_t)                           (Appendix F)

    s = w^T h_G(x_masked)_t: [B, K], the score of Electra.baseline_w from G's hidden state at each
    masked position. -log sigmoid(s) = softplus(-s) > 0, as a reward (a loss) is.
    Example: s = 0 -> b = log 2 = 0.693.
    """
    return F.softplus(-s.float())


def baseline_loss(s, R, m_valid):
    """L_b = E_t[ -exp(-R_t) log sigmoid(s_t) - (1 - exp(-R_t)) log(1 - sigmoid(s_t)) ]

    "The baseline is trained with cross-entropy loss to match the reward" (Appendix F). The paper
    does not say against what target; ours: R = -log q, where q = exp(-R) is the probability D gave
    the right answer, and b = -log sigmoid(s) matches R exactly when sigmoid(s) = q; the
    cross-entropy between q and sigmoid(s) is smallest there. Over the samples G may draw at a
    position it is smallest at sigmoid(s) = E[q], so b settles at -log E[exp(-R)], at or below the
    mean reward E[R], not at it; b does not depend on the sample, so the policy gradient stays
    unbiased all the same. Averaged over the masked positions.
    s, R: [B, K]; m_valid: [B, K] bool.
    """
    q = torch.exp(-R.detach().float())
    return _mean(F.binary_cross_entropy_with_logits(s.float(), q, reduction="none"), m_valid)


def policy_gradient_loss(logits_G, x_hat, R, b, m_valid, temperature: float = 1.0):
    """grad_theta_G L_Disc ~ E[ sum_{t in m} grad log p_G(x_hat_t | x_masked) (R(x_hat_t, x)
                                                                - b(x_masked, t)) ]  (Appendix F)

    REINFORCE with one sample per position: the loss whose gradient *descent* is that ascent is
        L_PG = -mean_{t in m} log p_G(x_hat_t | x_masked) * (R_t - b_t),
    the advantage R - b held constant, averaged over the batch's masked positions as L_MLM is (the
    appendix sums over t in m; the official code averages L_MLM). p_G is the distribution x_hat
    was sampled from, G's softmax at `temperature` (1 in the paper), so that the gradient is that
    of the policy actually run.
    logits_G: [B, K, V]; x_hat, R, b, m_valid: [B, K].
    """
    log_p = (logits_G.float() / temperature).log_softmax(-1)  # [B, K, V]
    log_p_hat = log_p.gather(-1, x_hat[..., None]).squeeze(-1)  # [B, K]
    advantage = (R - b).detach()
    return -_mean(log_p_hat * advantage, m_valid)


def adversarial_loss(model: Electra, h_G, m, m_valid, logits_G, x_hat, x_m, logits_D,
                     temperature: float):
    """G's loss under adversarial training (Appendix F): L_PG + L_b, in place of L_MLM.

    D's logits are taken at the masked positions only: under the appendix's assumption that D's
    prediction for a generated token does not depend on the other generated tokens, the unmasked
    tokens' terms of L_Disc do not depend on G and drop out. One D pass over x_corrupt gives them
    all (the assumption simplifies the credit assignment, not the computation). The baseline reads
    G's hidden states without sending gradient into them: its loss trains w only, and G's encoder
    learns from the policy gradient alone (the paper does not say). L_PG and L_b enter the loss
    with weight 1, as L_MLM does in the joint loss (the paper gives none). Appendix F describes no
    warm start, so G starts from its random initialisation, as in joint training. The embeddings G
    and D share (sharing "embeddings", the default) take both G's gradient, which raises L_Disc,
    and D's, which lowers it; the paper does not say what its adversarial runs shared.
    h_G: [B, T, Hg].
    """
    h_m = h_G.gather(1, m[..., None].expand(-1, -1, h_G.shape[-1]))  # [B, K, Hg]
    s = model.baseline_w(h_m.detach()).squeeze(-1)  # [B, K]
    R = reward(logits_D.gather(1, m), x_hat == x_m)  # [B, K]
    return (policy_gradient_loss(logits_G, x_hat, R, baseline(s), m_valid, temperature)
            + baseline_loss(s, R, m_valid))


def count_params(module: nn.Module) -> int:
    """Number of distinct parameters (a shared tensor counts once)."""
    return sum(p.numel() for p in module.parameters())


# -----------------------------------------------------------------------------
# Checking a config


def check_config(config: ElectraConfig) -> None:
    """Raise ValueError, naming the field, for a config no D (or the G derived from it) can be
    built from. Electra() calls it before building anything.
    """
    c = config
    if c.objective not in OBJECTIVES + SIBLING_OBJECTIVES:
        choices = ", ".join(OBJECTIVES + SIBLING_OBJECTIVES)
        raise ValueError(f"unknown objective {c.objective!r}: choose one of {choices}")
    if c.sharing not in SHARING:
        raise ValueError(f"unknown sharing {c.sharing!r}: choose one of {', '.join(SHARING)}")
    if c.algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {c.algorithm!r}: choose one of "
                         f"{', '.join(ALGORITHMS)}")
    if c.sharing != "embeddings" and c.objective not in WITH_DISCRIMINATOR:
        raise ValueError(f"sharing {c.sharing!r} is for a generator and a discriminator: "
                         f"objective {c.objective!r} has no discriminator")
    if c.sharing != "embeddings" and c.objective in SIBLING_OBJECTIVES:
        raise ValueError(f"sharing {c.sharing!r}: objective {c.objective!r} shares the "
                         f"embeddings only (sharing embeddings)")
    if c.algorithm != "joint" and c.objective != "electra":
        raise ValueError(f"algorithm {c.algorithm!r} trains ELECTRA's generator and "
                         f"discriminator: use it with objective electra")
    if c.algorithm == "two-stage" and c.sharing != "none":
        raise ValueError(f"algorithm two-stage keeps G frozen while D trains: nothing may be "
                         f"shared, use sharing none (not {c.sharing!r})")
    counts = ("vocab_size", "embedding_size", "hidden_size", "num_layers", "num_heads",
              "intermediate_size", "max_position", "type_vocab_size", "max_predictions")
    for name in counts:
        value = getattr(c, name)
        if not value >= 1:
            raise ValueError(f"{name} = {value}: must be at least 1")
    probabilities = ("dropout", "attention_dropout", "mask_prob", "mask_token_prob",
                     "bert_mask_token_prob", "bert_random_token_prob")
    for name in probabilities:
        value = getattr(c, name)
        if not 0 <= value <= 1:
            raise ValueError(f"{name} = {value}: must be a probability in [0, 1]")
    for name in ("layer_norm_eps", "init_std", "temperature"):
        value = getattr(c, name)
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} = {value}: must be a positive number")
    if not (math.isfinite(c.lam) and c.lam >= 0):
        raise ValueError(f"lam = {c.lam}: must be a number >= 0")
    if not 0 < c.generator_fraction <= 1:
        raise ValueError(f"generator_fraction = {c.generator_fraction}: must be in (0, 1]")
    bert_changed = c.bert_mask_token_prob + c.bert_random_token_prob
    if bert_changed > 1:
        raise ValueError(f"bert_mask_token_prob + bert_random_token_prob = {bert_changed}: "
                         f"must be at most 1")
    if c.hidden_size % c.num_heads:
        raise ValueError(f"hidden_size {c.hidden_size} is not divisible by num_heads "
                         f"{c.num_heads}: each head gets hidden_size / num_heads dimensions")
    g = generator_config(c)
    if g.hidden_size < 1 or g.hidden_size % g.num_heads:
        raise ValueError(f"generator_fraction {c.generator_fraction} gives the generator hidden "
                         f"size {g.hidden_size} with {g.num_heads} head(s) "
                         f"(hidden // {HEAD_SIZE}): choose a fraction of hidden_size "
                         f"{c.hidden_size} that is at least 1 and divisible by its heads")
    if c.sharing == "all" or c.algorithm == "two-stage":
        why = ("sharing all ties every weight of G and D" if c.sharing == "all"
               else "algorithm two-stage initialises D from G's weights")
        diff = same_shape(c)
        if diff:
            raise ValueError(f"{why}: G and D need the same shape, but G's differs "
                             f"({', '.join(diff)}): set generator_fraction 1 and "
                             f"generator_layers 1, with num_heads = hidden_size // {HEAD_SIZE}, "
                             f"intermediate_size = {FFN_RATIO} x hidden_size (sharing none: and "
                             f"embedding_size = hidden_size)")


# -----------------------------------------------------------------------------
# Optimization, shared by pre-training (train.py) and fine-tuning (finetune.py)


def lr_factor(step: int, total_steps: int, warmup_steps: int) -> float:
    """Multiplier of the peak lr at update `step` (0-based): linear warm-up, linear decay to zero.

    Official optimization.py: lr * min(1, step / warmup) * (1 - step / total) (polynomial decay,
    power 1), for pre-training and fine-tuning alike (Table 7: "Learning Rate Decay Linear").
    Deviation: warm-up counts step + 1, so that update 0 is not a no-op with lr 0.

    >>> [round(lr_factor(s, 10, 2), 2) for s in range(10)]
    [0.5, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]
    """
    warm = min(1.0, (step + 1) / warmup_steps) if warmup_steps > 0 else 1.0
    return warm * max(0.0, 1.0 - step / total_steps)


def decays(p: torch.Tensor) -> bool:
    """Whether weight decay applies to `p`: matrices only, never biases or LayerNorm.

    Official optimization.py excludes "LayerNorm", "layer_norm" and "bias" by name; here that is
    every parameter with fewer than 2 dimensions.
    """
    return p.dim() >= 2

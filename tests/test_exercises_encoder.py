"""Part 1's checks reject named wrong versions (exercises/check_encoder.py)."""
import math

import pytest
import torch
import torch.nn.functional as F
from test_exercises import rejects, solution

import electra
from exercises import check_encoder as part


def _attention_with(scale=True, mask="keys", softmax_dim=-1, fill=None, drop="weights"):
    def attention_reference(q, k, v, keep, dropout):
        scores = q @ k.transpose(-2, -1)
        if scale:
            scores = scores / math.sqrt(q.shape[-1])
        if mask == "keys":
            where = keep
        elif mask == "queries":  # [B, 1, 1, T] read as [B, 1, T, 1]
            where = keep.transpose(-2, -1)
        else:
            where = torch.ones_like(keep)
        value = torch.finfo(scores.dtype).min if fill is None else fill
        p = scores.masked_fill(~where, value).softmax(dim=softmax_dim)
        if drop == "weights":
            return dropout(p) @ v
        if drop == "output":
            return dropout(p @ v)
        return p @ v

    return attention_reference


def _self_attention_with(split="right", merge="right", project=True, order="qkv"):
    class SelfAttention(electra.SelfAttention):
        def forward(self, h, keep):
            B, T, H = h.shape
            n, d = self.n_head, H // self.n_head
            chunks = dict(zip(order, self.qkv(h).split(H, dim=-1)))
            q, k, v = chunks["q"], chunks["k"], chunks["v"]
            if split == "right":
                q, k, v = (t.view(B, T, n, d).transpose(1, 2) for t in (q, k, v))
            elif split == "no transpose":  # [B, T, H] viewed as [B, heads, T, d]
                q, k, v = (t.reshape(B, n, T, d) for t in (q, k, v))
            else:  # "interleaved": head j gets features j, j + heads, ...
                q, k, v = (t.view(B, T, d, n).permute(0, 3, 1, 2) for t in (q, k, v))
            y = electra.attention_reference(q, k, v, keep, self.attn_drop)
            if merge == "right":
                y = y.transpose(1, 2).reshape(B, T, H)
            else:  # [B, heads, T, d] read as [B, T, H] directly
                y = y.reshape(B, T, H)
            return self.out(y) if project else y

    return SelfAttention


def _block_with(pre_ln=False, gelu="none", attn_residual=True, ffn_residual=True):
    class Block(electra.Block):
        def forward(self, h, keep):
            def ffn(x):
                return self.fc2(F.gelu(self.fc1(x), approximate=gelu))

            if pre_ln:
                h = h + self.drop(self.attn(self.ln1(h), keep))
                return h + self.drop(ffn(self.ln2(h)))
            a = self.drop(self.attn(h, keep))
            h = self.ln1(h + a if attn_residual else a)
            f = self.drop(ffn(h))
            return self.ln2(h + f if ffn_residual else f)

    return Block


def _embeddings_with(position=True, start=0, ln=True, drop="last"):
    class Embeddings(electra.Embeddings):
        def forward(self, input_ids, segment_ids):
            e = self.word(input_ids) + self.segment(segment_ids)
            if position:
                e = e + self.position(torch.arange(input_ids.shape[1]) + start)
            if drop == "first":
                e = self.drop(e)
            if ln:
                e = self.ln(e)
            return self.drop(e) if drop == "last" else e

    return Embeddings


def _encoder_with(project=True, keep_of=None, reverse=False, use_given=True):
    class Encoder(electra.Encoder):
        def hidden_states(self, input_ids, segment_ids, attention_mask, keep=None):
            h = self.embeddings(input_ids, segment_ids)
            if project and self.embeddings_project is not None:
                h = self.embeddings_project(h)
            if keep is None or not use_given:
                keep = (keep_of or (lambda m: m.bool()[:, None, None, :]))(attention_mask)
            for block in (reversed(self.layers) if reverse else self.layers):
                h = block(h, keep)
            return h

    return Encoder


WRONG = {
    "attention_reference: no 1/sqrt(d) scaling": (
        part.check_attention_reference, solution(attention_reference=_attention_with(scale=False))),
    "attention_reference: mask on the queries": (
        part.check_attention_reference,
        solution(attention_reference=_attention_with(mask="queries"))),
    "attention_reference: padding not masked": (
        part.check_attention_reference, solution(attention_reference=_attention_with(mask=None))),
    "attention_reference: softmax over the queries": (
        part.check_attention_reference,
        solution(attention_reference=_attention_with(softmax_dim=-2))),
    "attention_reference: -inf fill (nan when every key is padding)": (
        part.check_attention_reference,
        solution(attention_reference=_attention_with(fill=float("-inf")))),
    "attention_reference: dropout on the output": (
        part.check_attention_reference,
        solution(attention_reference=_attention_with(drop="output"))),
    "attention_reference: no dropout": (
        part.check_attention_reference, solution(attention_reference=_attention_with(drop=None))),
    "SelfAttention.forward: heads viewed as [B, heads, T, d] without the transpose": (
        part.check_self_attention,
        solution(SelfAttention=_self_attention_with(split="no transpose"))),
    "SelfAttention.forward: heads interleaved (features j, j + heads, ...)": (
        part.check_self_attention,
        solution(SelfAttention=_self_attention_with(split="interleaved"))),
    "SelfAttention.forward: heads merged without the transpose back": (
        part.check_self_attention, solution(SelfAttention=_self_attention_with(merge="wrong"))),
    "SelfAttention.forward: no output projection": (
        part.check_self_attention, solution(SelfAttention=_self_attention_with(project=False))),
    "SelfAttention.forward: K, Q, V order": (
        part.check_self_attention, solution(SelfAttention=_self_attention_with(order="kqv"))),
    "Block.forward: pre-LayerNorm": (part.check_block, solution(Block=_block_with(pre_ln=True))),
    "Block.forward: tanh GELU": (part.check_block, solution(Block=_block_with(gelu="tanh"))),
    "Block.forward: no residual around attention": (
        part.check_block, solution(Block=_block_with(attn_residual=False))),
    "Block.forward: no residual around the FFN": (
        part.check_block, solution(Block=_block_with(ffn_residual=False))),
    "Embeddings.forward: no position embeddings": (
        part.check_embeddings, solution(Embeddings=_embeddings_with(position=False))),
    "Embeddings.forward: positions start at 1": (
        part.check_embeddings, solution(Embeddings=_embeddings_with(start=1))),
    "Embeddings.forward: no LayerNorm": (
        part.check_embeddings, solution(Embeddings=_embeddings_with(ln=False))),
    "Embeddings.forward: dropout before the LayerNorm": (
        part.check_embeddings, solution(Embeddings=_embeddings_with(drop="first"))),
    "Embeddings.forward: no dropout": (
        part.check_embeddings, solution(Embeddings=_embeddings_with(drop=None))),
    "Encoder.hidden_states: projection skipped": (
        part.check_encoder, solution(Encoder=_encoder_with(project=False))),
    "Encoder.hidden_states: keep True on padding": (
        part.check_encoder,
        solution(Encoder=_encoder_with(keep_of=lambda m: (m == 0)[:, None, None, :]))),
    "Encoder.hidden_states: keep [B, 1, T, 1]": (
        part.check_encoder,
        solution(Encoder=_encoder_with(keep_of=lambda m: m.bool()[:, None, :, None]))),
    "Encoder.hidden_states: keep as a float mask": (
        part.check_encoder,
        solution(Encoder=_encoder_with(keep_of=lambda m: m.float()[:, None, None, :]))),
    "Encoder.hidden_states: blocks in reverse": (
        part.check_encoder, solution(Encoder=_encoder_with(reverse=True))),
    "Encoder.hidden_states: a caller's keep ignored": (
        part.check_encoder, solution(Encoder=_encoder_with(use_given=False))),
}


@pytest.mark.parametrize("name", WRONG)
def test_check_rejects(name):
    check, student = WRONG[name]
    rejects(check, student)


def test_the_wrong_versions_differ_from_the_project_only_where_named():
    """The helpers above, with nothing changed, are right: so each wrong version is wrong for the
    reason its name gives, not for a slip in the helper."""
    student = solution(attention_reference=_attention_with(),
                       SelfAttention=_self_attention_with(), Block=_block_with(),
                       Embeddings=_embeddings_with(), Encoder=_encoder_with())
    for check in (part.check_attention_reference, part.check_self_attention, part.check_block,
                  part.check_embeddings, part.check_encoder):
        check(student)

"""Part 5's checks reject named wrong versions (exercises/check_beyond.py)."""
import math

import pytest
import torch
from test_exercises import rejects, solution

from exercises import check_beyond as part


def _nce_logits_with(energy_sign=1.0, log_q_sign=1.0, inverted=False, prior=True,
                     upcast=True, detach=False, via_exp=False):
    """s = -(E + log q + log(p / (1 - p))), or one of the ways to get it wrong."""
    def nce_logits(energies, log_q, noise_rate):
        if upcast:
            energies, log_q = energies.float(), log_q.float()
        if detach:
            energies = energies.detach()
        ratio = (1 - noise_rate) / noise_rate if inverted else noise_rate / (1 - noise_rate)
        if via_exp:  # the first form, log[(1 - p) exp(-E)] - log[p q], through exp
            return (torch.log((1 - noise_rate) * torch.exp(-energies))
                    - torch.log(noise_rate * torch.exp(log_q)))
        c = math.log(ratio) if prior else 0.0
        return -(energy_sign * energies + log_q_sign * log_q + c)

    return nce_logits


def _init_d_with(head=False, blocks_only=False, share=False, share_modules=False,
                 new_params=False, no_grad=True, freeze_d=False, reverse=False):
    """D's encoder := G's, or one of the ways to get it wrong."""
    def init_discriminator_from_generator(model):
        G, D = model.generator, model.discriminator
        if reverse:
            G, D = D, G
        if share_modules:  # D runs G's modules: no copy at all
            D.embeddings, D.layers = G.embeddings, G.layers
            return
        g = dict(G.named_parameters())
        with torch.set_grad_enabled(not no_grad):
            for name, p in D.named_parameters():
                if name not in g or (name.startswith("head") and not head):
                    continue
                if blocks_only and not name.startswith("layers."):
                    continue
                if share:
                    p.data = g[name].data
                elif new_params:
                    module_name, _, attr = name.rpartition(".")
                    setattr(D.get_submodule(module_name), attr,
                            torch.nn.Parameter(g[name].detach().clone()))
                else:
                    p.copy_(g[name])
        if freeze_d:  # "keep frozen" read as D's, not G's
            D.requires_grad_(False)

    return init_discriminator_from_generator


WRONG = {
    "nce_logits: prior ratio inverted, log((1 - p) / p)": (
        part.check_nce_logits, solution(nce_logits=_nce_logits_with(inverted=True))),
    "nce_logits: energy's sign flipped, +E": (
        part.check_nce_logits, solution(nce_logits=_nce_logits_with(energy_sign=-1.0))),
    "nce_logits: log q added instead of subtracted": (
        part.check_nce_logits, solution(nce_logits=_nce_logits_with(log_q_sign=-1.0))),
    "nce_logits: no prior term": (
        part.check_nce_logits, solution(nce_logits=_nce_logits_with(prior=False))),
    "nce_logits: computed in the inputs' bfloat16": (
        part.check_nce_logits, solution(nce_logits=_nce_logits_with(upcast=False))),
    "nce_logits: energies detached": (
        part.check_nce_logits, solution(nce_logits=_nce_logits_with(detach=True))),
    "nce_logits: through exp(-E), which overflows": (
        part.check_nce_logits, solution(nce_logits=_nce_logits_with(via_exp=True))),
    "init_d: copies the head too": (
        part.check_init_discriminator_from_generator,
        solution(init_discriminator_from_generator=_init_d_with(head=True))),
    "init_d: shares G's storage (p.data = g.data)": (
        part.check_init_discriminator_from_generator,
        solution(init_discriminator_from_generator=_init_d_with(share=True))),
    "init_d: D takes G's modules by reference": (
        part.check_init_discriminator_from_generator,
        solution(init_discriminator_from_generator=_init_d_with(share_modules=True))),
    "init_d: copies only the blocks, not the embeddings": (
        part.check_init_discriminator_from_generator,
        solution(init_discriminator_from_generator=_init_d_with(blocks_only=True))),
    "init_d: new Parameters the optimizer does not hold": (
        part.check_init_discriminator_from_generator,
        solution(init_discriminator_from_generator=_init_d_with(new_params=True))),
    "init_d: copies with autograd on": (
        part.check_init_discriminator_from_generator,
        solution(init_discriminator_from_generator=_init_d_with(no_grad=False))),
    "init_d: freezes D": (
        part.check_init_discriminator_from_generator,
        solution(init_discriminator_from_generator=_init_d_with(freeze_d=True))),
    "init_d: copies D into G": (
        part.check_init_discriminator_from_generator,
        solution(init_discriminator_from_generator=_init_d_with(reverse=True))),
}


@pytest.mark.parametrize("name", WRONG)
def test_check_rejects(name):
    check, student = WRONG[name]
    rejects(check, student)


@pytest.mark.parametrize("name", WRONG)
def test_each_wrong_version_fails_for_its_own_reason(name):
    """The message names the mistake, so a student learns what to fix (a wrong version that only
    trips an unrelated line would hide a check that misses it)."""
    expected = {
        "prior ratio inverted": "log(0.15 / 0.85)",
        "energy's sign flipped": "E = 1, q = 1/2, p = 1/2",
        "log q added": "E = 1, q = 1/2, p = 1/2",
        "no prior term": "log(0.15 / 0.85)",
        "bfloat16": "must be float32",
        "detached": "gradient of the energies",
        "overflows": "finite",
        "copies the head too": "keep its initialisation",
        "shares G's storage": "shares G's storage",
        "by reference": "is G's Parameter",
        "only the blocks": "embeddings.word.weight must equal",
        "new Parameters": "is a new Parameter",
        "autograd on": "torch.no_grad()",
        "freezes D": "no longer requires grad",
        "copies D into G": "must equal G's",
    }
    check, student = WRONG[name]
    message = rejects(check, student)
    want = next(v for k, v in expected.items() if k in name)
    assert want in message, f"{name}: {message}"

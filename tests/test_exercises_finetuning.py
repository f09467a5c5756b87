"""Part 4's checks reject named wrong versions (exercises/check_finetuning.py)."""
import pytest
import torch
import torch.nn as nn
from test_exercises import rejects, solution

import finetune
from exercises import check_finetuning as part

# --- exercise 16: layer_lr_scales -----------------------------------------------------------------

WRONG_LR = {
    "official top off by one":
        lambda n, d, official=True: [d ** (n + 1 - i) for i in range(n + 1)] + [1.0],
    "ignores official":
        lambda n, d, official=True: [d ** (n + 2 - i) for i in range(n + 1)] + [1.0],
    "decays the top layers most":
        lambda n, d, official=True: [1.0] + [d ** (i + 1) for i in range(n + 1)],
    "head decayed too": lambda n, d, official=True: [d ** (n + 2 - i) for i in range(n + 2)],
    "one scale short": lambda n, d, official=True: [d ** (n + 1 - i) for i in range(n)] + [1.0],
    "official=False by default":
        lambda n, d, official=False: [d ** ((n + 2 if official else n + 1) - i)
                                      for i in range(n + 1)] + [1.0],
}

# --- exercise 17: AdamWeightDecay.step ------------------------------------------------------------


def _adam_with(bias_correction=False, coupled=False, eps_inside=False, default_lr=False,
               decay_without_lr=False, zero_missing_grads=False):
    """A subclass of the project's optimizer whose step makes one of the named mistakes."""

    class Wrong(finetune.AdamWeightDecay):
        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr = self.defaults["lr"] if default_lr else group["lr"]
                wd, eps = group["weight_decay"], group["eps"]
                for p in group["params"]:
                    if p.grad is None and not zero_missing_grads:
                        continue
                    g = torch.zeros_like(p) if p.grad is None else p.grad
                    if coupled:  # L2: the decay goes into the gradient, then through Adam
                        g = g + wd * p
                    state = self.state[p]
                    if not state:
                        state.update(m=torch.zeros_like(p), v=torch.zeros_like(p), t=0)
                    state["t"] += 1
                    state["m"] = beta1 * state["m"] + (1 - beta1) * g
                    state["v"] = beta2 * state["v"] + (1 - beta2) * g * g
                    m, v = state["m"], state["v"]
                    if bias_correction:  # torch's AdamW
                        m, v = m / (1 - beta1 ** state["t"]), v / (1 - beta2 ** state["t"])
                    adam = m / ((v + eps).sqrt() if eps_inside else v.sqrt() + eps)
                    decay = 0.0 if coupled else wd * p
                    if decay_without_lr:
                        p.sub_(lr * adam + decay)
                    else:
                        p.sub_(lr * (adam + decay))

    return Wrong


# --- exercise 18: Classifier.forward --------------------------------------------------------------


def _classifier_with(pool="cls", dropout="module", pooler=False):
    """A subclass of the project's Classifier whose forward makes one of the named mistakes."""

    class Wrong(finetune.Classifier):
        def __init__(self, config, num_outputs, p):
            super().__init__(config, num_outputs, p)
            if pooler:  # BERT's next-sentence pooler: dense(H, H) + tanh on h_[CLS]
                self.pooler = nn.Linear(config.hidden_size, config.hidden_size)

        def forward(self, input_ids, segment_ids, attention_mask):
            h = self.encoder.hidden_states(input_ids, segment_ids, attention_mask)
            if pool == "mean":  # the mean over the real tokens
                mask = attention_mask[..., None].to(h.dtype)
                x = (h * mask).sum(1) / mask.sum(1)
            elif pool == "last":
                x = h[:, -1]
            else:
                x = h[:, 0]
            if pooler:
                x = torch.tanh(self.pooler(x))
            if dropout == "module":
                return self.classifier(self.dropout(x))
            if dropout == "none":
                return self.classifier(x)
            if dropout == "always":  # F.dropout's training=True: dropout in eval mode too
                return self.classifier(torch.nn.functional.dropout(x, self.dropout.p))
            if dropout == "fixed 0.1":  # the official keep_prob 0.9, whatever the module says
                return self.classifier(torch.nn.functional.dropout(x, 0.1, self.training))
            return self.dropout(self.classifier(x))  # "after": on the logits

    return Wrong


WRONG = {
    **{f"layer_lr_scales: {name}": (part.check_layer_lr_scales, solution(layer_lr_scales=fn))
       for name, fn in WRONG_LR.items()},
    "AdamWeightDecay.step: AdamW's bias correction":
        (part.check_adam_weight_decay, solution(AdamWeightDecay=_adam_with(bias_correction=True))),
    "AdamWeightDecay.step: L2 weight decay added to the gradient":
        (part.check_adam_weight_decay, solution(AdamWeightDecay=_adam_with(coupled=True))),
    "AdamWeightDecay.step: eps inside the square root":
        (part.check_adam_weight_decay, solution(AdamWeightDecay=_adam_with(eps_inside=True))),
    "AdamWeightDecay.step: the default lr instead of the group's":
        (part.check_adam_weight_decay, solution(AdamWeightDecay=_adam_with(default_lr=True))),
    "AdamWeightDecay.step: weight decay not scaled by lr":
        (part.check_adam_weight_decay, solution(AdamWeightDecay=_adam_with(decay_without_lr=True))),
    "AdamWeightDecay.step: a missing gradient taken as zero":
        (part.check_adam_weight_decay,
         solution(AdamWeightDecay=_adam_with(zero_missing_grads=True))),
    "Classifier.forward: mean pooling":
        (part.check_classifier, solution(Classifier=_classifier_with(pool="mean"))),
    "Classifier.forward: the last token":
        (part.check_classifier, solution(Classifier=_classifier_with(pool="last"))),
    "Classifier.forward: no dropout":
        (part.check_classifier, solution(Classifier=_classifier_with(dropout="none"))),
    "Classifier.forward: dropout in eval mode too":
        (part.check_classifier, solution(Classifier=_classifier_with(dropout="always"))),
    "Classifier.forward: dropout fixed at 0.1":
        (part.check_classifier, solution(Classifier=_classifier_with(dropout="fixed 0.1"))),
    "Classifier.forward: dropout on the logits":
        (part.check_classifier, solution(Classifier=_classifier_with(dropout="after"))),
    "Classifier.forward: BERT's tanh pooler":
        (part.check_classifier, solution(Classifier=_classifier_with(pooler=True))),
}


@pytest.mark.parametrize("name", WRONG)
def test_check_rejects(name):
    check, student = WRONG[name]
    rejects(check, student)

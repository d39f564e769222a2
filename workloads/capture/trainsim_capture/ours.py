"""Our own validation scripts' models as `--module` factories:
reports/validation/scripts/model.py (GPT) and model_llama.py (Llama-style), imported by path.

On PyTorch < 2.4 `nn.RMSNorm` is missing (model_llama.py) and on < 2.0 so is
`scaled_dot_product_attention`: the capture's stand-ins provide them (compat.py), so these models
are capturable on Debian's 1.13 as well, with the math attention path."""
import importlib
import sys

from .models import scripts_on_path


def _load(name):
    with scripts_on_path():
        if name in sys.modules:
            return sys.modules[name]
        return importlib.import_module(name)


def _loss(model, ids, targets):
    with scripts_on_path():
        mod = _load("model")
    return mod.loss_fn(model(ids), targets)


def gpt(layers, a, d, f, V, P):
    """model.py's GPT: hidden = heads x head_dim, learned positions (P), tied head, GELU MLP of width f."""
    with scripts_on_path():
        mod = _load("model")
        return mod.GPT(layers, a * d, a, V, P, ffn_hidden=f)


gpt.trainsim_symbols = ["a", "d", "f", "V", "P"]
gpt.trainsim_ties = {"h": "a*d", "kv": "a"}
gpt.trainsim_layers_attr = "blocks"
gpt.trainsim_loss = _loss


def llama(layers, kv, g, d, f, V, s):
    """model_llama.py's Llama: heads = kv x g, hidden = heads x head_dim; its rotary table has the
    run's sequence length (the script's seq), so P = s."""
    a = kv * g
    with scripts_on_path():
        mod = _load("model_llama")
        return mod.Llama(layers, a * d, a, kv, f, V, s)


llama.trainsim_symbols = ["kv", "g", "d", "f", "V", "s"]
llama.trainsim_ties = {"a": "kv*g", "h": "a*d"}
llama.trainsim_layers_attr = "blocks"
llama.trainsim_loss = _loss

"""Model sources: a Hugging Face config.json, or the user's own module factory.

A source knows its symbols (which config values are the capture's b, s, h, a, kv, g, d, f, V, P,
and how they are tied), builds the model at any symbol values with a given list of layer kinds,
and says how the loss is computed. Refusals (MoE, encoder-decoder) happen here, before anything
is built, and do not need transformers installed.
"""
import contextlib
import hashlib
import importlib
import json
import os
import sys

import torch

from .errors import CaptureError
from .step import Built
from .symbols import SymbolSpace

RUN_SYMBOLS = ("b", "s")


def _space_for(values_t, independent, ties, fixed=None):
    """Symbols equal to 1 at the requested size are fixed (a size-1 dimension changes PyTorch's
    view/copy decisions, so the capture does not scale across it); g = 1 ties kv to a."""
    independent = list(independent)
    ties = dict(ties)
    fixed = dict(fixed or {})
    if values_t.get("g") == 1 and "g" in independent:
        independent.remove("g")
        fixed["g"] = 1
    for s in list(independent):
        if values_t.get(s) == 1:
            independent.remove(s)
            fixed[s] = 1
    return SymbolSpace(independent, ties, fixed)


def _head_dim_overrides(values_t):
    ov = {}
    d = values_t.get("d")
    if d is not None and d > 256:
        ov["d"] = (264, 272, 280)  # keep SDPA's flash eligibility (head_dim <= 256) on the same side
    return ov


class Source:
    kind = "module"
    name = "model"

    def provenance(self):
        return {}

    def stand_ins(self):
        return []

    @contextlib.contextmanager
    def patches(self):
        yield


# ---------------------------------------------------------------------------------------------
# the user's module

def load_factory(spec):
    if ":" not in spec:
        raise CaptureError(f"--module {spec!r}: expected 'package.module:factory'")
    mod_name, fn_name = spec.split(":", 1)
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as e:
        raise CaptureError(f"--module {spec!r}: cannot import {mod_name}: {e}")
    fn = getattr(mod, fn_name, None)
    if fn is None or not callable(fn):
        raise CaptureError(f"--module {spec!r}: {mod_name} has no callable {fn_name}")
    return fn


class ModuleSource(Source):
    """factory(layers=N, **symbols) -> nn.Module. The factory (or the CLI) names its symbols, their
    ties, the attribute path of its nn.ModuleList of layers and the loss (default: cross-entropy of
    the logits in fp32, as reports/validation/scripts/model.py's loss_fn)."""

    kind = "module"

    def __init__(self, spec, dims, layers, symbols=None, ties=None, layers_attr=None, loss=None):
        self.spec = spec
        self.factory = load_factory(spec) if isinstance(spec, str) else spec
        self.name = spec if isinstance(spec, str) else getattr(spec, "__name__", "model")
        self.symbols = list(symbols or getattr(self.factory, "trainsim_symbols", sorted(dims)))
        self.ties = dict(ties if ties is not None else getattr(self.factory, "trainsim_ties", {}))
        self.layers_attr = layers_attr or getattr(self.factory, "trainsim_layers_attr", None)
        self.loss = loss or getattr(self.factory, "trainsim_loss", None)
        self.full_layers = int(layers)
        self.dims = dict(dims)
        needed = set(self.symbols) | set(self.ties)
        for t in self.ties.values():
            needed |= set(_symbols_in(t))
        self.needed = needed - set(RUN_SYMBOLS)
        for k in self.dims:
            if k not in self.needed:
                raise CaptureError(f"--dims {k}: this model's symbols are {', '.join(sorted(self.needed))}", key=k)

    def target_values(self, run):
        from .poly import parse
        v = dict(self.dims)
        v["b"], v["s"] = run.micro_batch, run.seq
        # alternative spellings: heads and kv heads give the group size, hidden and heads the head width
        if "g" in self.needed and "g" not in v and "a" in v and "kv" in v:
            if v["a"] % v["kv"]:
                raise CaptureError(f"heads a={v['a']} is not a multiple of kv heads kv={v['kv']}", key="kv")
            v["g"] = v["a"] // v["kv"]
        if "d" in self.needed and "d" not in v and "h" in v and "a" in v:
            if v["h"] % v["a"]:
                raise CaptureError(f"hidden h={v['h']} is not a multiple of heads a={v['a']}", key="h")
            v["d"] = v["h"] // v["a"]
        for _ in range(len(self.ties) + 1):
            for k, t in self.ties.items():
                try:
                    val = parse(t).evaluate(v)
                except KeyError:
                    continue
                if k in self.dims and self.dims[k] != val:
                    raise CaptureError(f"--dims {k}={self.dims[k]} contradicts {k} = {t} = {val}", key=k)
                v[k] = val
        missing = sorted(s for s in self.needed if s not in v)
        if missing:
            raise CaptureError(f"give {', '.join(missing)} in --dims (this model's symbols: "
                               f"{', '.join(sorted(self.needed))})", key=missing[0])
        return v

    def space(self, values_t):
        indep = list(RUN_SYMBOLS)
        for s in sorted(self.needed, key=lambda x: "bshakvgdfVPE".find(x) if x in "bshakvgdfVPE" else 99):
            if s not in self.ties and s not in indep:
                indep.append(s)
        return _space_for(values_t, indep, self.ties)

    def generic_overrides(self, values_t):
        return _head_dim_overrides(values_t)

    def layer_kinds_full(self):
        return ["decoder"] * self.full_layers

    def capture_kinds(self):
        return ["decoder"] * 3

    def build(self, values, kinds):
        kw = {s: values[s] for s in self.symbols}
        model = self.factory(layers=len(kinds), **kw)
        path, layers = find_layers(model, len(kinds), self.layers_attr)
        loss = self.loss or default_loss
        return Built(model, layers, loss, kinds, path)

    def provenance(self):
        return {"type": "module", "factory": self.name, "dims": dict(sorted(self.dims.items())),
                "layers": self.full_layers}


def _symbols_in(expr):
    import re
    return re.findall(r"[A-Za-z_][A-Za-z_0-9]*", expr)


def default_loss(model, ids, targets):
    out = model(ids)
    logits = out if isinstance(out, torch.Tensor) else getattr(out, "logits", None)
    if logits is None:
        raise CaptureError("the model's forward returned no logits tensor; give a loss (trainsim_loss)")
    return torch.nn.functional.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))


def find_layers(model, n, attr=None):
    if attr:
        obj = model
        for part in attr.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                raise CaptureError(f"the model has no attribute {attr!r} (layers)", key="layers-attr")
        return attr, obj
    best = None
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.ModuleList) and len(m) == n:
            if best is None or len(name) < len(best[0]):
                best = (name, m)
    if best is None:
        raise CaptureError(f"found no nn.ModuleList of {n} layers in the model; name it (--layers-attr)")
    return best


# ---------------------------------------------------------------------------------------------
# our validation scripts' models (reports/validation/scripts/model.py, model_llama.py)

def repo_root():
    return os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


@contextlib.contextmanager
def scripts_on_path():
    d = os.path.join(repo_root(), "reports", "validation", "scripts")
    from . import compat
    sys.path.insert(0, d)
    try:
        with compat.rmsnorm_installed():
            yield
    finally:
        sys.path.remove(d)


# ---------------------------------------------------------------------------------------------
# Hugging Face configs

MOE_KEYS = ("num_local_experts", "num_experts", "moe_num_experts", "n_routed_experts", "n_shared_experts",
            "num_experts_per_tok", "moe_intermediate_size", "router_aux_loss_coef", "moe_layer_freq")
MOE_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "dbrx", "jamba", "olmoe",
             "granitemoe", "granitemoeshared", "phimoe", "jetmoe", "switch_transformers", "nllb_moe", "llama4",
             "gpt_oss", "minimax", "hunyuan_v1_moe", "ernie4_5_moe", "glm4_moe", "deepseek", "arctic",
             "qwen3_next", "dots1", "bailing_moe")
ENC_DEC_TYPES = ("t5", "mt5", "umt5", "bart", "mbart", "pegasus", "pegasus_x", "marian", "blenderbot",
                 "blenderbot-small", "whisper", "led", "longt5", "prophetnet", "fsmt", "m2m_100", "nllb",
                 "bigbird_pegasus", "plbart", "seamless_m4t", "speech_to_text", "encoder-decoder", "t5gemma",
                 "mllama", "moonshine", "switch_transformers")

HF_SYMBOL_KEYS = {
    "h": ("hidden_size", "n_embd", "d_model", "dim"),
    "a": ("num_attention_heads", "n_head", "n_heads", "num_heads"),
    "L": ("num_hidden_layers", "n_layer", "n_layers", "num_layers"),
    "V": ("vocab_size",),
}


def check_hf_dict(cfg, path):
    """Refusals and required keys, from the JSON alone."""
    if not isinstance(cfg, dict):
        raise CaptureError("expected a JSON object", file=path)
    mt = cfg.get("model_type")
    if not isinstance(mt, str):
        raise CaptureError("missing or not a string (the Hugging Face model_type)", file=path, key="model_type")
    text = cfg.get("text_config")
    for where, d in (("", cfg), ("text_config.", text if isinstance(text, dict) else {})):
        for k in MOE_KEYS:
            v = d.get(k)
            if v not in (None, 0, False, [], 1) or (k in ("num_local_experts", "num_experts", "n_routed_experts",
                                                          "moe_num_experts") and v not in (None, 0, False)):
                raise CaptureError(
                    f"{v!r}: mixture-of-experts layers are not supported: the capture has no token-routing "
                    "capability (which tokens reach which expert, the per-expert GEMMs of data-dependent sizes "
                    "and the expert-parallel all-to-all); a dense model only",
                    file=path, key=where + k)
        dmt = d.get("model_type", "")
        if dmt in MOE_TYPES:
            raise CaptureError(f"{dmt!r} is a mixture-of-experts architecture: not supported (no token-routing "
                               "capability in the capture)", file=path, key=where + "model_type")
        if d.get("is_encoder_decoder") is True:
            raise CaptureError("true: encoder-decoder models are not supported (the capture records a decoder-only "
                               "causal LM; no encoder or cross-attention capability)", file=path,
                               key=where + "is_encoder_decoder")
        if d.get("add_cross_attention") is True:
            raise CaptureError("true: cross-attention is not supported (decoder-only causal LMs only)",
                               file=path, key=where + "add_cross_attention")
        if dmt in ENC_DEC_TYPES:
            raise CaptureError(f"{dmt!r} is an encoder-decoder architecture: not supported (decoder-only causal "
                               "LMs only; no cross-attention capability)", file=path, key=where + "model_type")
    base = text if isinstance(text, dict) and "hidden_size" not in cfg else cfg
    for sym, keys in HF_SYMBOL_KEYS.items():
        if not any(k in base for k in keys) and base.get("model_type") not in ("gpt2",):
            # transformers supplies defaults for many keys; only a wrong type is refused here
            continue
        for k in keys:
            if k in base and (not isinstance(base[k], int) or isinstance(base[k], bool) or base[k] <= 0):
                raise CaptureError(f"{base[k]!r}: expected a positive integer", file=path, key=k)
    arch = cfg.get("architectures")
    if isinstance(arch, list) and arch and not any(
            a.endswith(("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")) for a in arch):
        raise CaptureError(f"{arch!r}: not a causal language model (decoder-only *ForCausalLM / *LMHeadModel)",
                           file=path, key="architectures")


def config_hash(cfg):
    return hashlib.sha256(json.dumps(cfg, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class HFSource(Source):
    kind = "hf-config"

    def __init__(self, cfg_dict, path="<config>", full_layers=None):
        check_hf_dict(cfg_dict, path)
        self.path = path
        self.cfg_dict = cfg_dict
        self.sha256 = config_hash(cfg_dict)
        try:
            import transformers
        except ImportError:
            raise CaptureError("building a Hugging Face model needs the transformers package (not installed "
                               "for this Python)", file=path)
        self.transformers = transformers
        self.config = self._make_config(cfg_dict)
        self.model_type = self.config.model_type
        self.name = os.path.basename(path) if path else self.model_type
        c = self.config
        L = _get(c, "num_hidden_layers")
        self.full_layers = int(full_layers or L)
        lt = getattr(c, "layer_types", None)
        self.layer_types = list(lt) if isinstance(lt, (list, tuple)) and len(lt) == L else None
        # head_dim can be set apart from hidden/heads where the config stores it as a plain attribute
        # (falcon's is a read-only property); whether the model uses it is found out by capturing
        # (a capture that cannot be expressed is retried with h = a*d)
        self.head_dim_free = _settable(c, "head_dim") and (
            getattr(c, "head_dim", None) is not None or self.model_type in (
                "llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "olmo2"))
        self.force_tied = False

    def _make_config(self, d):
        AutoConfig = self.transformers.AutoConfig
        d = dict(d)
        mt = d.pop("model_type")
        try:
            cfg = AutoConfig.for_model(mt, **d)
        except Exception as e:
            raise CaptureError(f"transformers cannot make a config of model_type {mt!r}: {e}", file=self.path,
                               key="model_type")
        from transformers import AutoModelForCausalLM
        mapping = getattr(AutoModelForCausalLM, "_model_mapping", None)
        # a multimodal config (gemma3, ...) whose text model is a causal LM of its own: capture that
        tc = getattr(cfg, "text_config", None)
        if tc is not None and tc is not cfg and mapping is not None:
            try:
                mapping[type(tc)]
                return tc
            except KeyError:
                pass
        ok = True
        if mapping is not None:
            try:
                mapping[type(cfg)]
            except KeyError:
                ok = False
        if not ok:
            tc = getattr(cfg, "text_config", None) or getattr(cfg, "get_text_config", lambda: None)()
            if tc is not None and tc is not cfg:
                try:
                    mapping[type(tc)]
                    return tc
                except KeyError:
                    pass
            raise CaptureError(f"model_type {mt!r} has no causal-LM class in transformers "
                               f"{self.transformers.__version__}", file=self.path, key="model_type")
        return cfg

    # symbols --------------------------------------------------------------------------------
    def _f_attr(self):
        c = self.config
        for k in ("intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim"):
            if hasattr(c, k):
                return k
        return None

    def _kv(self):
        c = self.config
        if self.model_type == "falcon":
            if getattr(c, "new_decoder_architecture", False):
                return getattr(c, "num_kv_heads", None) or _get(c, "num_attention_heads"), "num_kv_heads"
            return (1 if getattr(c, "multi_query", True) else _get(c, "num_attention_heads")), None
        kv = getattr(c, "num_key_value_heads", None)
        if kv is not None:
            return kv, "num_key_value_heads"
        return _get(c, "num_attention_heads"), None

    def target_values(self, run):
        c = self.config
        h = _get(c, "hidden_size")
        a = _get(c, "num_attention_heads")
        kv, _ = self._kv()
        d = getattr(c, "head_dim", None) or h // a
        fk = self._f_attr()
        f = getattr(c, fk, None) if fk else None
        if f is None:
            f = 4 * h
        v = {"b": run.micro_batch, "s": run.seq, "h": h, "a": a, "kv": kv, "g": a // kv, "d": d, "f": f,
             "V": _get(c, "vocab_size")}
        P = getattr(c, "max_position_embeddings", None)
        if P is not None:
            v["P"] = P
        if a % kv:
            raise CaptureError(f"num_attention_heads {a} is not a multiple of the key/value heads {kv}",
                               file=self.path, key="num_key_value_heads")
        return v

    def space(self, values_t):
        _, kv_key = self._kv()
        indep, ties, fixed = ["b", "s"], {}, {}
        if kv_key is None:
            indep.append("a")
            if values_t["kv"] == 1:      # multi-query attention with no key/value-heads knob (falcon)
                fixed["kv"] = 1
                ties["g"] = "a"
            else:                        # multi-head attention only
                ties["kv"] = "a"
                fixed["g"] = 1
        else:
            indep += ["kv", "g"]
            ties["a"] = "kv*g"
        if self.head_dim_free and not self.force_tied:
            indep.append("h")
        else:
            ties["h"] = "a*d"
        indep += ["d", "f", "V"] + (["P"] if "P" in values_t else [])
        return _space_for(values_t, indep, ties, fixed)

    def generic_overrides(self, values_t):
        ov = _head_dim_overrides(values_t)
        pr = getattr(self.config, "partial_rotary_factor", None) or getattr(self.config, "rotary_pct", None)
        if pr is not None and pr != 1:
            from fractions import Fraction
            p = Fraction(pr).limit_denominator(64)
            cands = [x for x in range(16, 4096, 8) if (x * p).denominator == 1 and int(x * p) % 2 == 0
                     and (x <= 256) == (values_t["d"] <= 256)]
            ov["d"] = tuple(cands[1:4])
        return ov

    def layer_kinds_full(self):
        if self.layer_types:
            return list(self.layer_types)
        return ["decoder"] * self.full_layers

    def capture_kinds(self):
        kinds = []
        for k in self.layer_kinds_full():
            if k not in kinds:
                kinds.append(k)
        out = []
        for k in kinds:
            out += [k] * 3
        return out

    def _configured(self, values, kinds):
        import copy
        c = copy.deepcopy(self.config)
        _set(c, "hidden_size", values["h"])
        _set(c, "num_attention_heads", values["a"])
        _, kv_key = self._kv()
        if kv_key is not None:
            _set(c, kv_key, values["kv"])
        if self.head_dim_free and not self.force_tied:
            _set(c, "head_dim", values["d"])
        elif _settable(c, "head_dim") and getattr(c, "head_dim", None) is not None:
            _set(c, "head_dim", values["h"] // values["a"])
        fk = self._f_attr()
        if fk is not None:
            _set(c, fk, values["f"])
        _set(c, "vocab_size", values["V"])
        if "P" in values and getattr(c, "max_position_embeddings", None) is not None:
            _set(c, "max_position_embeddings", values["P"])
        _set(c, "num_hidden_layers", len(kinds))
        if self.layer_types is not None:
            c.layer_types = list(kinds)
        for k in ("pad_token_id", "bos_token_id", "eos_token_id"):
            v = getattr(c, k, None)
            if isinstance(v, int) and v >= values["V"]:
                setattr(c, k, values["V"] - 1)
            elif isinstance(v, list):
                setattr(c, k, [min(x, values["V"] - 1) for x in v])
        w = getattr(c, "sliding_window", None)
        if isinstance(w, int) and w > 0:
            wt = self._window_t
            st = self._s_t
            s = values["s"]
            if (s < wt) != (st < wt):
                c.sliding_window = max(1, s // 2) if st >= wt else 2 * s
        c.use_cache = False
        for k in ("attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop",
                  "hidden_dropout_prob", "attention_probs_dropout_prob", "dropout"):
            if isinstance(getattr(c, k, None), float):
                setattr(c, k, 0.0)
        return c

    def build(self, values, kinds):
        c = self._configured(values, kinds)
        from transformers import AutoModelForCausalLM
        kw = {"attn_implementation": "sdpa"}
        try:
            model = AutoModelForCausalLM.from_config(c, **kw)
        except (ValueError, ImportError):
            model = AutoModelForCausalLM.from_config(c)
        path, layers = find_layers(model, len(kinds))
        return Built(model, layers, hf_loss, kinds, path)

    def prepare(self, run):
        self._s_t = run.seq
        self._window_t = getattr(self.config, "sliding_window", None) or 0

    @contextlib.contextmanager
    def patches(self):
        """Stand-in: transformers' packed-sequence detection (masking_utils.find_packed_sequence_indices)
        asks `(mask[:, -1] == 0).all()` of the position ids, which fake tensors cannot answer (and
        transformers treats a fake tensor as tracing and keeps the mask, which would turn SDPA's causal
        flag into a materialized mask). The stand-in runs the same ops and answers "no packing", what a
        real run on unpacked rows finds."""
        mu = None
        try:
            import transformers.masking_utils as mu
        except ImportError:
            pass
        orig = getattr(mu, "find_packed_sequence_indices", None) if mu is not None else None
        if orig is not None:
            def find_packed_sequence_indices(position_ids):
                first = position_ids[:, :1] - 1
                diff = torch.diff(position_ids, prepend=first, dim=-1)
                m = (diff != 1).cumsum(-1)
                (m[:, -1] == 0).all()
                return None
            mu.find_packed_sequence_indices = find_packed_sequence_indices
        try:
            yield
        finally:
            if orig is not None:
                mu.find_packed_sequence_indices = orig

    def stand_ins(self):
        return ["transformers packed-sequence detection answers 'no packing' (masking_utils."
                "find_packed_sequence_indices; fake tensors have no values)",
                "attn_implementation='sdpa' (transformers' choice where a model refuses it)"]

    def provenance(self):
        return {"type": "hf-config", "file": os.path.basename(self.path), "sha256": self.sha256,
                "model_type": self.model_type,
                "architectures": list(self.cfg_dict.get("architectures") or []),
                "transformers": self.transformers.__version__, "layers": self.full_layers}


def hf_loss(model, ids, targets):
    out = model(input_ids=ids, labels=targets, use_cache=False)
    loss = out.loss
    del out
    return loss


def _get(c, k):
    v = getattr(c, k, None)
    if v is None:
        raise CaptureError("missing", key=k)
    return v


def _set(c, k, v):
    setattr(c, k, v)


def _settable(c, k):
    """An attribute a config stores (not a read-only property of its class)."""
    prop = getattr(type(c), k, None)
    if isinstance(prop, property):
        return prop.fset is not None
    return True


def load_hf_config(path):
    try:
        with open(path) as f:
            d = json.load(f)
    except OSError as e:
        raise CaptureError(f"cannot read: {e.strerror}", file=path)
    except json.JSONDecodeError as e:
        raise CaptureError(f"not valid JSON: {e}", file=path)
    return d


def parse_dims(text):
    dims = {}
    if not text:
        return dims
    for part in text.split(","):
        if "=" not in part:
            raise CaptureError(f"--dims {text!r}: expected name=value[,name=value...]")
        k, v = part.split("=", 1)
        k = k.strip()
        try:
            dims[k] = int(v)
        except ValueError:
            raise CaptureError(f"--dims {k}={v!r}: expected an integer", key=k)
        if dims[k] <= 0:
            raise CaptureError(f"--dims {k}={v}: expected a positive integer", key=k)
    return dims


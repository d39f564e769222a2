"""trainsim's own model JSON (schema: workloads/models/gpt2-1.5b.json) for a model of the measured
runs' scripts (model.py's GPT, model_llama.py's decoder): what both write around their own
architecture keys."""


def trainsim_model_doc(name, description, architecture, params, script, fp32_residual=False):
    """The document: `architecture` the architecture object, `params` the module's exact parameter
    count, `script` the file that defines the module (named in published.source)."""
    doc = {
        "schema_version": 1,
        "name": name,
        "description": description,
        "architecture": architecture,
        "numerics": {"precision": "bf16-mixed", "attention": "flash"},
        "published": {
            "params": float(params),
            "significant_digits": 6,
            "source": f"counted from {script} (exact parameter count of the module)",
        },
    }
    if fp32_residual:
        doc["numerics"]["fp32_residual"] = True
    return doc

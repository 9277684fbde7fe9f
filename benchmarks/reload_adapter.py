"""A saved adapter loads onto a fresh base whole, bit for bit, and changes what the base computes.

The GPU check after ``train.py`` on Qwen2.5-14B's shape: the base is loaded by the project's own
loader (NF4 on a GPU, as training and the local backend load it), the adapter by peft. Every LoRA
tensor in ``adapter_model.safetensors`` must land in the model unchanged (peft only warns about a
key it cannot place, and a dtype cast would round), and the logits of one prompt with the adapter
must differ from the base's (a trained adapter's B matrices are not zero).

    python benchmarks/reload_adapter.py --model qwen2.5-14b-instruct --model-path $WEIGHTS \\
        --adapter outputs/adapters/qwen2.5-14b-instruct/all/compare

Exits 1 when a tensor is missing or differs, or the adapter leaves the logits as they were.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="a config name in configs/model/")
    ap.add_argument("--model-path", help="the base's folder, in place of the config's path")
    ap.add_argument("--adapter", required=True, help="the folder train.py saved the adapter in")
    args = ap.parse_args()

    import torch
    from peft import PeftModel
    from safetensors.torch import load_file

    from memops.core.models import load_model, model_config

    cfg = model_config(args.model)
    if args.model_path:
        cfg = dataclasses.replace(cfg, path=args.model_path)
    saved = load_file(str(Path(args.adapter) / "adapter_model.safetensors"))
    base, tokenizer = load_model(cfg)
    model = PeftModel.from_pretrained(base, args.adapter)
    # peft saves "base_model.model.<module>.lora_A.weight"; in the model the adapter's name is
    # inserted: "...lora_A.default.weight".
    loaded = {
        name.replace(".default.", "."): tensor
        for name, tensor in model.state_dict().items()
        if "lora_" in name
    }
    missing = sorted(set(saved) - set(loaded))
    # Compared in the file's dtype: a tensor the model holds in a narrower one comes back rounded.
    differ = [
        name
        for name, tensor in saved.items()
        if name in loaded and not loaded[name].cpu().to(tensor.dtype).equal(tensor)
    ]
    print(
        f"{len(saved)} tensors saved, {len(saved) - len(missing) - len(differ)} reloaded bit for bit, "
        f"{len(missing)} missing, {len(differ)} differ"
    )
    for name in (missing + differ)[:10]:
        print(f"  {name}")
    ids = tokenizer("compare: permissions_flow.approvals", return_tensors="pt").to(base.device)
    with torch.no_grad():
        adapted = model(**ids).logits.float()
        with model.disable_adapter():
            plain = model(**ids).logits.float()
    moved = (adapted - plain).abs().max().item()
    print(f"logits with the adapter against the base: max |difference| {moved:.3g}")
    return 1 if missing or differ or moved == 0 else 0


if __name__ == "__main__":
    sys.exit(main())

"""The same debate through llama.cpp's server (``local/``) and through the in-process ``hf/`` provider.

Both run SmolLM2-135M-Instruct from the one GGUF file MAD Lab ships: transformers reads the
GGUF (``from_pretrained(..., gguf_file=...)``, which dequantizes it with the ``gguf``
package) and the checkpoint is saved once as a Hugging Face directory under
``$MADLAB_HOME/bench/`` (the temp dir when unset); nothing is downloaded. One seeded debate
(3 agents, simultaneous, 2 rounds, convergence: no short replies) runs on each backend, and
the table gives the wall time, the tokens generated and tokens per second of wall time.
``hf/`` serves one request at a time (see ``mad_core/models/hf_local.py``); on a GPU
(torch sees CUDA) the ``hf/`` rows run there, and llama.cpp runs there when its server was
built with ``MADLAB_CUDA=1``: issue 8's "same debate through llama.cpp CUDA and through hf".

    .venv/bin/python bench/hf_speed.py
    .venv/bin/python bench/hf_speed.py --rounds 3 --max-tokens 128

Skipped, saying why, without the ``gguf`` package or the offline model. No target: the
figures say which path to take (README "GPUs and clusters").
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Result, finish, parser  # noqa: E402

QUESTION = "A farmer has 17 sheep. All but 9 run away. How many sheep are left?"


def checkpoint(gguf_path: str) -> Path:
    """A Hugging Face directory holding the GGUF's weights (made once, then reused)."""
    home = os.environ.get("MADLAB_HOME")
    root = Path(home).expanduser() / "bench" if home else Path(tempfile.gettempdir()) / "madlab-bench"
    folder = root / f"hf-{Path(gguf_path).stem}"
    if not (folder / "config.json").is_file():
        from transformers import AutoModelForCausalLM, AutoTokenizer

        where, name = os.path.dirname(gguf_path), os.path.basename(gguf_path)
        root.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(dir=root, prefix="hf-partial-"))
        AutoTokenizer.from_pretrained(where, gguf_file=name).save_pretrained(partial)
        model = AutoModelForCausalLM.from_pretrained(where, gguf_file=name)
        # The weights are plain float tensors now, but transformers marks a GGUF-loaded model
        # as quantized and refuses save_pretrained: write the config and the tensors ourselves.
        from safetensors.torch import save_model

        config = model.config
        if hasattr(config, "quantization_config"):
            delattr(config, "quantization_config")
        config.save_pretrained(partial)
        model.generation_config.save_pretrained(partial)
        save_model(model, str(partial / "model.safetensors"))
        partial.rename(folder)  # whole or not at all
    return folder


def run(model: str, rounds: int, max_tokens: int) -> tuple[float, int, str]:
    """(wall seconds, tokens generated, final status) of one seeded debate on ``model``."""
    from mad_core import DebateConfig, DebateEngine
    from mad_core.events import TurnFinished

    config = DebateConfig.from_dict({
        "question": QUESTION, "paradigm": "simultaneous", "protocol": "convergence", "rounds": rounds,
        "max_rounds": rounds, "seed": 7, "extract_final_answers": False,
        "agents": [{"label": f"Agent {i + 1}", "model": model, "max_tokens": max_tokens, "temperature": 0.7}
                   for i in range(3)]})
    started = time.perf_counter()
    events = list(DebateEngine(config).run())
    wall = time.perf_counter() - started
    tokens = sum(e.turn.completion_tokens or 0 for e in events if isinstance(e, TurnFinished))
    return wall, tokens, events[-1].status


def main(argv: list[str] | None = None) -> int:
    cli = parser(__doc__)
    cli.add_argument("--rounds", type=int, default=2)
    cli.add_argument("--max-tokens", type=int, default=96)
    args = cli.parse_args(argv)

    result = Result("hf_speed", f"One debate (3 agents x {args.rounds} rounds, simultaneous) through llama.cpp "
                                f"and through hf/", ["backend", "device", "wall s", "tokens", "tokens / s (wall)",
                                                      "status"])
    from mad_core.models import DEFAULT_MODEL, validate_model_name

    problem = validate_model_name(DEFAULT_MODEL)
    if problem or importlib.util.find_spec("gguf") is None:
        result.skipped = problem or "the gguf package is not installed (requirements-dev.txt has it)"
        return finish(result, args)
    import torch

    from mad_core.models import hf_local, llama_server, local_gguf

    gguf_path = local_gguf.resolve(DEFAULT_MODEL.split("/", 1)[1])
    hf_model = hf_local.register_hf_alias("smollm2-135m-bench", checkpoint(gguf_path))
    server = llama_server.server_for(gguf_path)
    rows = [(DEFAULT_MODEL, "llama.cpp server, " + ("GPU" if server.gpu_layers else "CPU")),
            (hf_model, "transformers in process, " + ("CUDA" if torch.cuda.is_available() else "CPU"))]
    for model, device in rows:
        wall, tokens, status = run(model, args.rounds, args.max_tokens)
        result.rows.append([model, device, wall, tokens, tokens / wall if wall else 0.0, status])
    result.notes.append("the hf/ checkpoint holds the served GGUF's weights dequantized (the same numbers, as "
                        "floats), so both rows run the same model; sampling differs, so token counts do too")
    return finish(result, args)


if __name__ == "__main__":
    sys.exit(main())

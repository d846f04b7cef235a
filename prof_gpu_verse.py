import cProfile, pstats, time, io
import numpy as np
from benchmarks.gpu import _verse_inputs, INPUTS
from linxling import Cr5
import cupy
blocks, concepts, test, qpos, ref = _verse_inputs(INPUTS)
bl = {k: v.astype(np.float32) for k, v in blocks.items()}
kw = dict(n_components=100, alpha=1.0, random_state=0, show_progress=False, device="cuda")
for _ in range(3):
    cupy.cuda.get_current_stream().synchronize(); t = time.perf_counter()
    m = Cr5(**kw).fit_matrices(bl, concepts); cupy.cuda.get_current_stream().synchronize()
    print("fit", round(time.perf_counter() - t, 4), {k: round(v, 4) for k, v in m.fit_info_.items() if k.startswith("time_")})
pr = cProfile.Profile(); pr.enable()
m = Cr5(**kw).fit_matrices(bl, concepts); cupy.cuda.get_current_stream().synchronize()
pr.disable()
for key in ("tottime", "cumulative"):
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats(key).print_stats(45); print(s.getvalue()[:9000])

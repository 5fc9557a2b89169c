"""Two processes, DDP over gloo on the cpu, a model of dwconv layers: the averaged
gradients equal the single-process gradients of the whole batch, bit for bit."""
import os
import subprocess
import sys

import torch

import ddp_model

HERE = os.path.dirname(os.path.abspath(__file__))


def test_ddp_two_processes_match_one(tmp_path):
    world = 2
    env = os.environ.copy()
    env["PYTHONPATH"] = os.pathsep.join([HERE, env.get("PYTHONPATH", "")])
    env["GLOO_SOCKET_IFNAME"] = "lo"  # the ranks talk over loopback only
    env["OMP_NUM_THREADS"] = "1"
    store = tmp_path / "store"
    outs = [tmp_path / f"grads{r}.pt" for r in range(world)]
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "ddp_worker.py"), str(r),
                               str(world), str(store), str(outs[r])], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    logs = []
    for p in procs:
        try:
            logs.append(p.communicate(timeout=240)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
    assert all(p.returncode == 0 for p in procs), "\n".join(logs)

    model = ddp_model.model()
    x, target = ddp_model.batch()
    ddp_model.loss(model(x), target).backward()
    single = [p.grad for p in model.parameters()]
    for out in outs:
        grads = torch.load(out)
        assert len(grads) == len(single) == 5
        for g, s in zip(grads, single):
            assert g.shape == s.shape and torch.equal(g, s)
    assert any(s.abs().sum() > 0 for s in single)

"""Runs AlphaZero_Gomoku's training pipeline (`train.py` of a checkout at a named commit:
Gomoku 6x6, four in a row, 400 playouts, its PyTorch network) for a wall-clock budget.

What differs from `python train.py`, none of it in learning: the PyTorch network is used
(train.py's commented-out import line; its default is Theano, which no longer installs),
with `train_step` returning `loss.item()` (the line its own comment gives for PyTorch >= 0.4);
its monitoring evaluation (10 games against pure MCTS every 50 games) is skipped, as azjax's
runs here skip theirs; the network is saved to OUT/models/MINUTES.pt each minute; the budget
ends the run.

usage: python agz_train.py AGZ_DIR OUT MINUTES
"""

import json
import os
import sys
import time

agz, out, minutes = os.path.abspath(sys.argv[1]), sys.argv[2], float(sys.argv[3])
sys.path.insert(0, agz)
os.makedirs(os.path.join(out, "models"), exist_ok=True)
start = time.time()
with open(os.path.join(out, "start.json"), "w") as f:
    json.dump({"start": start, "minutes": minutes}, f)

import policy_value_net_pytorch  # noqa: E402
import torch  # noqa: E402

# train.py imports the Theano network at its top; the PyTorch one stands in for it.
sys.modules["policy_value_net"] = policy_value_net_pytorch
import train  # noqa: E402


class PolicyValueNet(policy_value_net_pytorch.PolicyValueNet):
    def train_step(self, state_batch, mcts_probs, winner_batch, lr):
        self.optimizer.zero_grad()
        policy_value_net_pytorch.set_learning_rate(self.optimizer, lr)
        log_act_probs, value = self.policy_value_net(torch.FloatTensor(state_batch))
        value_loss = torch.nn.functional.mse_loss(value.view(-1), torch.FloatTensor(winner_batch))
        policy_loss = -torch.mean(torch.sum(torch.FloatTensor(mcts_probs) * log_act_probs, 1))
        loss = value_loss + policy_loss
        loss.backward()
        self.optimizer.step()
        entropy = -torch.mean(torch.sum(torch.exp(log_act_probs) * log_act_probs, 1))
        return loss.item(), entropy.item()


train.PolicyValueNet = PolicyValueNet
pipeline = train.TrainPipeline()
pipeline.policy_evaluate = lambda n_games=10: 0.0
collect = pipeline.collect_selfplay_data
saved = {"minute": 0, "games": 0, "positions": 0}


def collect_and_save(n_games=1):
    collect(n_games)
    saved["games"] += n_games
    saved["positions"] += pipeline.episode_len
    elapsed = (time.time() - start) / 60
    if elapsed >= saved["minute"] + 1 or elapsed >= minutes:
        saved["minute"] = int(elapsed)
        net = pipeline.policy_value_net.policy_value_net
        torch.save(net.state_dict(), os.path.join(out, "models", f"{elapsed:07.2f}.pt"))
        with open(os.path.join(out, "progress.jsonl"), "a") as f:
            f.write(json.dumps({"minutes": round(elapsed, 2), **saved}) + "\n")
    if elapsed >= minutes:
        sys.exit(0)


pipeline.collect_selfplay_data = collect_and_save
pipeline.run()

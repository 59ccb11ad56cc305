import torch

from mylib import generation


def rollout(policy, prompts, max_new, pad_id, rng, temperature=1.0, top_k=None):
    prompts = prompts.to("neuron")
    with torch.no_grad():
        tokens, logits = generation.generate(
            model=policy,
            prompt=prompts,
            max_generated_tokens=max_new,
            pad_id=pad_id,
            temperature=temperature,
            top_k=top_k,
            rng=rng,
        )
    return tokens, logits

"""The KV cache geometry of a target: bytes of K and V per token and layer, from its config.json or a table of
known targets (costmodel/context.py turns it into the KV term's prior)."""

from typing import Any

# KV geometry (layers, bytes of K and V per token and layer in bf16) from each config.json:
# GQA 2 x kv_heads x head_dim x 2 bytes; MLA (DeepSeek-V3, Kimi K2) (kv_lora_rank 512 + rope 64) x 2 bytes.
KNOWN_KV_GEOMETRY = {
    "llama-3.2-1b": (16, 2048.0),
    "llama-3.2-3b": (28, 4096.0),
    "llama-3.1-8b": (32, 4096.0),
    "meta-llama-3.1-8b": (32, 4096.0),
    "llama-3-8b": (32, 4096.0),
    "meta-llama-3-8b": (32, 4096.0),
    "llama-3.1-70b": (80, 4096.0),
    "llama-3.3-70b": (80, 4096.0),
    "qwen3-4b": (36, 4096.0),
    "qwen3-8b": (36, 4096.0),
    "qwen3-14b": (40, 4096.0),
    "qwen3-32b": (64, 4096.0),
    "qwen3-30b-a3b": (48, 2048.0),
    "qwen3-coder-30b-a3b": (48, 2048.0),
    "qwen3-235b-a22b": (94, 2048.0),
    "qwen3-coder-480b-a35b": (62, 4096.0),
    "deepseek-v3": (61, 1152.0),
    "deepseek-r1": (61, 1152.0),
    "kimi-k2": (61, 1152.0),
    "gpt-oss-120b": (36, 2048.0),
    "gpt-oss-20b": (24, 2048.0),
    "mixtral-8x7b": (32, 4096.0),
    "llama-4-scout-17b-16e": (48, 4096.0),
    # its 10 full-attention layers (4 KV heads x 512); the other 50 attend over a window (below)
    "gemma-4-31b": (10, 8192.0),
}
# Targets whose other layers attend over the last `window` tokens only, so their cache stops growing there:
# (window tokens, K and V bytes of one token summed over those layers, bf16). Gemma-4-31B's config.json
# (text_config): 50 `sliding_attention` layers of 16 KV heads x 256 over 1,024 tokens.
KNOWN_WINDOWED_KV = {
    "gemma-4-31b": (1024, 50 * 16384.0),
}


def kv_bytes_per_layer_token(config: dict[str, Any]) -> float | None:
    if config.get("kv_lora_rank"):  # multi-head latent attention caches one compressed vector
        return 2.0 * float(config["kv_lora_rank"] + (config.get("qk_rope_head_dim") or 0))
    heads = config.get("num_key_value_heads") or config.get("num_attention_heads")
    head_dim = config.get("head_dim")
    if not head_dim and config.get("hidden_size") and config.get("num_attention_heads"):
        head_dim = config["hidden_size"] / config["num_attention_heads"]
    return 4.0 * float(heads) * float(head_dim) if heads and head_dim else None


def known_kv_fields(name: str) -> dict[str, Any] | None:
    """The KV geometry of a target whose (lower-case) name starts like a tabled one, as TargetArchitecture's
    fields; None when none is."""
    geometry = next((g for key, g in KNOWN_KV_GEOMETRY.items() if name.startswith(key)), None)
    if geometry is None:
        return None
    window = next((w for key, w in KNOWN_WINDOWED_KV.items() if name.startswith(key)), (None, None))
    return {
        "num_layers": geometry[0],
        "kv_bytes_per_layer_token": geometry[1],
        "window_tokens": window[0],
        "windowed_kv_bytes_per_token": window[1],
    }

"""The real-file gate: files that engines, trainers and benchmark tools wrote and their users published,
each loaded whole (no rule may refuse one) with the numbers worked out by hand from the file itself.
tests/fixtures/real/README.md says where each comes from and under which licence."""

from dataclasses import dataclass

import pytest

from specdash.ingest.links import LinkOptions
from specdash.ingest.policy import IngestPolicy
from tests.conftest import FIXTURES
from tests.ingest_support import benchmarks, load

REAL = FIXTURES / "real"


@dataclass(frozen=True)
class Expected:
    """One stored benchmark: concurrency, per-request and aggregate tok/s, accept length (None: none)."""

    concurrency: int
    decode_tps: float
    output_throughput: float | None
    accept_length: float | None


GATE = {
    # sglang#9585: 1P1D over mooncake, 32 concurrent; 1000 / median TPOT 49.4525 ms, aggregate as printed
    "real/sglang_bench_serving_pd_mooncake_9585.jsonl": [
        Expected(32, 1000 / 49.45251944893692, 470.75469529455864, None)
    ],
    # club-3090#93: two 10-s intervals at 1 running (123.8 and 124.5 tok/s: median 124.15); accept length
    # over both SpecDecoding lines, 5 positions: (768 + 2355/5 + 777 + 2345/5) / (2355/5 + 2345/5)
    "real/vllm_log_club3090_issue93.log": [
        Expected(1, 124.15, 124.15, (768 + 471 + 777 + 469) / (471 + 469))
    ],
    # club-3090#46: 89.6 and 90.1 tok/s at 1 running (median 89.85); the one SpecDecoding line after an
    # interval: 561 accepted over 1685 / 5 = 337 rounds (its first line belongs to an earlier interval)
    "real/vllm_log_club3090_issue46.log": [Expected(1, (89.6 + 90.1) / 2, (89.6 + 90.1) / 2, 1 + 561 / 337)],
    # club-3090#34: 35.2, 34.8, 35.2 tok/s at 1 running (median 35.2); every draft accepted in both
    # SpecDecoding lines, 3 positions: (264 + 264/3 + 261 + 261/3) / (264/3 + 261/3) = 4
    "real/vllm_log_club3090_issue34.log": [Expected(1, 35.2, 35.2, (264 + 88 + 261 + 87) / (88 + 87))],
    # club-3090#105: 74.7 and 72.0 tok/s at 1 running (median 73.35); 6 positions: 489 + 455 accepted over
    # 1572/6 + 1590/6 = 262 + 265 rounds
    "real/vllm_log_club3090_issue105.log": [
        Expected(1, (74.7 + 72.0) / 2, (74.7 + 72.0) / 2, 1 + (489 + 455) / (262 + 265))
    ],
    # club-3090#986: 249.5 and 249.7 tok/s at 1 running; 3 positions: 1871 + 1872 accepted over
    # 1872/3 + 1875/3 = 624 + 625 rounds
    "real/vllm_log_club3090_issue986.log": [
        Expected(1, (249.5 + 249.7) / 2, (249.5 + 249.7) / 2, 1 + (1871 + 1872) / (624 + 625))
    ],
    # vllm#41789: 93.9 and 44.7 tok/s at 3 running, heavy prefill in both (median 69.3, per request / 3);
    # 4 positions: 25 + 15 accepted over 3652/4 + 1724/4 = 913 + 431 rounds
    "real/vllm_log_gemma4_mtp_issue41789.log": [
        Expected(3, (93.9 + 44.7) / 2 / 3, (93.9 + 44.7) / 2, 1 + (25 + 15) / (913 + 431))
    ],
    # vllm#43295 (a queue waiting, heavy prefill): 8 then 9 running never holds, one varying level at the
    # median 8.5 (stored rounded half to even: 8); aggregate median of 1004.4 and 1024.8, per request
    # median of 1004.4/8 and 1024.8/9; the one SpecDecoding line after an interval, 2 positions:
    # 6418 accepted over 7254/2 = 3627 rounds
    "real/vllm_log_mtp_queue_issue43295.log": [
        Expected(8, (1004.4 / 8 + 1024.8 / 9) / 2, (1004.4 + 1024.8) / 2, 1 + 6418 / 3627)
    ],
    # sglang comm_overlap results (bench_one_batch_server, 1024 in / 8 out, no speculation): batch sizes 1,
    # 16 and 64, aggregate = "output_throughput", per request = output_throughput / batch_size
    "real/sglang_one_batch_server_te_tp4_b805a815.jsonl": [
        Expected(1, 122.37, 122.37, None),
        Expected(16, 568.48 / 16, 568.48, None),
        Expected(64, 612.36 / 64, 612.36, None),
    ],
    # the same benchmark twice over (two runs of batch sizes 1, 16, 64: repeats, both kept)
    "real/sglang_one_batch_server_torch_tp4_b805a815.jsonl": [
        Expected(1, 96.57, 96.57, None),
        Expected(16, 276.36 / 16, 276.36, None),
        Expected(64, 292.6 / 64, 292.6, None),
        Expected(1, 130.12, 130.12, None),
        Expected(16, 580.73 / 16, 580.73, None),
        Expected(64, 516.61 / 64, 516.61, None),
    ],
    # vllm#19254 (ngram, hundreds queued, prefill in every interval): 337, 629, 610 running never holds,
    # one varying level at the median 610; aggregate median of 267.6, 826.0, 3399.1; per request median of
    # 267.6/337, 826.0/629, 3399.1/610; 3 positions: 150 + 725 accepted over 387/3 + 1488/3 rounds
    "real/vllm_log_ngram_saturated_issue19254.log": [
        Expected(610, 826.0 / 629, 826.0, 1 + (150 + 725) / (129 + 496))
    ],
    # vllm#43295, a later excerpt: three intervals at 9 running (80 queued), two with prefill, too few
    # prefill-free ones to leave them out: median of 1137.0, 972.4, 683.6, per request / 9; 2 positions:
    # 6973 + 6077 accepted over 8802/2 + 7300/2 = 4401 + 3650 rounds
    "real/vllm_log_mtp_queue_issue43295_b.log": [
        Expected(9, 972.4 / 9, 972.4, 1 + (6973 + 6077) / (4401 + 3650))
    ],
    # club-3090#77: 81.2 and 92.5 tok/s at 1 running (median 86.85); 3 positions: 504 + 591 accepted over
    # 921/3 + 999/3 = 307 + 333 rounds
    "real/vllm_log_club3090_issue77.log": [
        Expected(1, (81.2 + 92.5) / 2, (81.2 + 92.5) / 2, 1 + (504 + 591) / (307 + 333))
    ],
    # club-3090#613: 128.4 and 132.0 tok/s at 1 running (median 130.2); the one SpecDecoding line after an
    # interval, 3 positions: 805 accepted over 1434/3 = 478 rounds
    "real/vllm_log_club3090_issue613.log": [
        Expected(1, (128.4 + 132.0) / 2, (128.4 + 132.0) / 2, 1 + 805 / 478)
    ],
    # sglang#11948: five Decode batch lines at 1 running; the first had the prefill: the other four,
    # median of 178.86, 165.41, 188.68, 165.59 tok/s and of accept len 1.95, 1.80, 2.05, 1.80
    "real/sglang_log_eagle3_issue11948.log": [
        Expected(1, (165.59 + 178.86) / 2, (165.59 + 178.86) / 2, 1.875)
    ],
    # joyagent-jdgenie#197: eight Decode batch lines at 1 running, no speculation, no prefill line; median of
    # 69.55, 69.06, 68.75, 68.71, 68.73, 68.73, 68.71, 68.55 tok/s: the 4th and 5th sorted, both 68.73
    "real/sglang_log_baseline_joyagent197.log": [Expected(1, 68.73, 68.73, None)],
    # sglang-jax#564 (no TP prefix): nine Decode batch lines at 1 running, no speculation; median of 84.39,
    # 84.23, 84.41, 84.92, 84.52, 84.40, 84.57, 84.50, 84.69 tok/s: the 5th sorted, 84.50
    "real/sglang_jax_log_pr564.log": [Expected(1, 84.50, 84.50, None)],
    # sglang#30047 (comma wording, NPU, tqdm bars between): 2499.67 tok/s at 68 running, accept len 2.99;
    # the line at 45 running is the drain (a fall of more than a quarter), a ramp
    "real/sglang_log_npu_mamba_pr30047.log": [Expected(68, 2499.67 / 68, 2499.67, 2.99)],
    # sglang#3909: nine Decode batch lines at 8 running, no speculation; median of 183.54, 183.59, 183.58,
    # 182.35, 183.12, 182.91, 183.26, 180.98, 182.11 tok/s: the 5th sorted, 183.12, per request / 8
    "real/sglang_log_baseline_issue3909.log": [Expected(8, 183.12 / 8, 183.12, None)],
    # sgl-kernel-npu#608 ("TP0 EP0" ranks, a request-rate load 24, 23, 22 running that never holds): the
    # first Decode line shares its time with the Prefill line and is left out; the other two: median
    # running 23, aggregate median of 631.96 and 648.87, per request median of 631.96/23 and 648.87/22,
    # accept len median of 2.63 and 2.83
    "real/sglang_log_npu_ep_kernel608.log": [
        Expected(23, (631.96 / 23 + 648.87 / 22) / 2, (631.96 + 648.87) / 2, (2.63 + 2.83) / 2)
    ],
    # sglang#6017 (PD decode server, DP attention ranks DP24-DP30, one line each at 43 running): running
    # summed over the 7 ranks, 301; aggregate the sum of their tok/s, 385.00 + 384.94 + 384.89 + 384.89 +
    # 384.95 + 384.91 + 384.85; per request that / 301
    "real/sglang_log_pd_decode_dp_issue6017.log": [
        Expected(
            7 * 43,
            (385.00 + 384.94 + 384.89 + 384.89 + 384.95 + 384.91 + 384.85) / (7 * 43),
            385.00 + 384.94 + 384.89 + 384.89 + 384.95 + 384.91 + 384.85,
            None,
        )
    ],
    # sglang#22331 (comma wording, no speculation): eight Decode batch lines at 5 running; median of 144.95,
    # 140.27, 136.39, 139.89, 144.10, 157.64, 153.78, 157.11: the 4th and 5th sorted, per request / 5
    "real/sglang_log_baseline_pr22331.log": [
        Expected(5, (144.10 + 144.95) / 2 / 5, (144.10 + 144.95) / 2, None)
    ],
    # sglang#13023 (no TP prefix, no speculation): a load winding down 46, 36, 28, 22, 20, 15, 12, 11
    # running, no fall of more than a quarter, never held: one varying level at the median 21; aggregate
    # median of the eight tok/s (768.87 and 895.36 in the middle); per request the median of tok/s /
    # running, 1086.59/28 and 895.36/22 in the middle
    "real/sglang_log_drain_pr13023.log": [
        Expected(21, (1086.59 / 28 + 895.36 / 22) / 2, (768.87 + 895.36) / 2, None)
    ],
    # sglang#17392 (PD decode server, ranks DP0, DP2, DP3 with EP, one line each at 21, 20, 21 running):
    # running summed, 62; aggregate the sum 1774.38 + 1392.52 + 1612.16, per request that / 62
    "real/sglang_log_pd_decode_dp_ep_pr17392.log": [
        Expected(62, (1774.38 + 1392.52 + 1612.16) / 62, 1774.38 + 1392.52 + 1612.16, None)
    ],
    # fastrl#4 (a logging format of its own: `date time INFO pid [file:line] Decode batch.`): two lines at
    # 48 running, accept len 1.00 in both (speculation switched off above a batch-size threshold): median
    # of 5452.63 and 5399.46, per request / 48
    "real/sglang_log_custom_format_fastrl4.log": [
        Expected(48, (5452.63 + 5399.46) / 2 / 48, (5452.63 + 5399.46) / 2, 1.0)
    ],
    # sglang#22166 (no rank prefix, no speculation): the one Decode batch line, 1635.11 tok/s at 32
    # running (the Prefill lines after it at 31 running print no decode speed), per request / 32
    "real/sglang_log_one_decode_line_pr22166.log": [Expected(32, 1635.11 / 32, 1635.11, None)],
    # vllm#7540 (V0 wording): four intervals at 2 running, all with prefill: median of 85.3, 117.6, 114.5,
    # 116.4 tok/s over 2 requests; the one interval at 1 running is a ramp
    "real/vllm_log_v0_issue7540.log": [Expected(2, (114.5 + 116.4) / 2 / 2, (114.5 + 116.4) / 2, None)],
    # vllm#6768 (V0, Medusa at 16 tokens): 127.4 and 110.4 tok/s at 2 running (median 118.9, per request
    # / 2); no draft ever accepted (0 accepted tokens), so 1 token a round
    "real/vllm_log_v0_medusa_issue6768.log": [Expected(2, (127.4 + 110.4) / 2 / 2, (127.4 + 110.4) / 2, 1.0)],
    # vllm#50219 (CPU, s390x): five intervals at 1 running, no speculation; median of 1.1, 1.1, 1.2, 1.1, 1.1
    "real/vllm_log_cpu_s390x_pr50219.log": [Expected(1, 1.1, 1.1, None)],
    # tt-inference-server#3359 (docker timestamps before each line): the first interval is where the load
    # began, left out; the other at 9 running is no hold, off the level; 10 running holds for two
    # intervals, one prefill-free (too few to leave the other out): median of 5.7 and 7.2, per request / 10
    "real/vllm_log_docker_timestamps_tt3359.log": [Expected(10, (5.7 + 7.2) / 2 / 10, (5.7 + 7.2) / 2, None)],
    # qwen3.8-Flash-DGX#9: 34.1 (with prefill) and 38.6 tok/s at 3 running, one prefill-free interval
    # being too few to leave the other out: median 36.35, per request / 3; the one SpecDecoding line
    # after an interval, 2 positions: 156 accepted over 368/2 = 184 rounds
    "real/vllm_log_mtp_dgx_blazux9.log": [
        Expected(3, (34.1 + 38.6) / 2 / 3, (34.1 + 38.6) / 2, 1 + 156 / 184)
    ],
    # vllm#12314 (V0, no speculation): six intervals at 1 running, 41.7, 41.7, 41.5, 41.8, 41.8, 41.7 tok/s:
    # the 3rd and 4th sorted, both 41.7
    "real/vllm_log_v0_baseline_issue12314.log": [Expected(1, 41.7, 41.7, None)],
    # tt-inference-server#350 (V0 on Tenstorrent, no speculation): five intervals at 32 running, 73.1, 73.4,
    # 75.6, 74.5, 73.5 tok/s: the 3rd sorted, 73.5, per request / 32
    "real/vllm_log_v0_tenstorrent_dp16_tt350.log": [Expected(32, 73.5 / 32, 73.5, None)],
    # vllm-ascend#12521 (data parallel: Engine 002 and 004, one interval each at 1 running): running summed,
    # 2; aggregate the sum 43.3 + 45.0, per request / 2; 3 positions: 282 + 299 accepted over 453/3 + 453/3
    "real/vllm_log_ascend_dp_engines_issue12521.log": [
        Expected(2, (43.3 + 45.0) / 2, 43.3 + 45.0, 1 + (282 + 299) / (151 + 151))
    ],
    # vllm#50219, an earlier excerpt: five intervals at 1 running, 1.2, 1.2, 1.3, 1.3, 1.3 tok/s: median 1.3
    "real/vllm_log_cpu_s390x_pr50219_b.log": [Expected(1, 1.3, 1.3, None)],
    # meta-agents-research-environments#32 (no speculation): 12 running holds for two intervals (251.9 with
    # prefill, 296.4; one prefill-free is too few to leave the other out): median 274.15, per request / 12;
    # the interval at 11 after it is no hold, a ramp
    "real/vllm_log_baseline_are32.log": [Expected(12, (251.9 + 296.4) / 2 / 12, (251.9 + 296.4) / 2, None)],
    # vllm#46367: 63.8 and 63.1 tok/s at 1 running; the one SpecDecoding line after an interval: 33
    # accepted over 3025 / 5 rounds
    "real/vllm_log_glm52_mtp_issue46367.log": [
        Expected(1, (63.8 + 63.1) / 2, (63.8 + 63.1) / 2, 1 + 33 / 605)
    ],
    # SpecForge's dev_result.jsonl (bench_model_speedup.py): six mtbench rows at batch 8 (three repeats each of
    # 7/10/60 and 3/1/4), per request = "throughput" / batch_size, accept length = "acc_length"
    "real/specforge_dev_result_ec800a01.jsonl": [
        Expected(8, 1321.79 / 8, 1321.79, 4.14),
        Expected(8, 1754.67 / 8, 1754.67, 2.46),
        Expected(8, 1468.0 / 8, 1468.0, 4.6),
        Expected(8, 1864.16 / 8, 1864.16, 2.61),
        Expected(8, 1438.28 / 8, 1438.28, 4.51),
        Expected(8, 1796.37 / 8, 1796.37, 2.6),
    ],
    # SpecForge's bench_model_speedup.py run of gpt-oss-120b at batch 1 (a feature branch): the target alone
    # (steps 0, acc_length 1.0: no speculation) on mtbench, gsm8k, humaneval and mtbench again (348.65 then
    # 333.45 tok/s: a repeat, both kept), then EAGLE3 3/1/4 on mtbench at 507.45 tok/s, accept length 2.68;
    # "throughput" is completion_tokens / duration (27468 / 78.78 = 348.67), one request at a time
    "real/specforge_gpt_oss_120b_eagle3_a8dad99a.jsonl": [
        Expected(1, 348.65, 348.65, None),
        Expected(1, 337.26, 337.26, None),
        Expected(1, 349.82, 349.82, None),
        Expected(1, 333.45, 333.45, None),
        Expected(1, 507.45, 507.45, 2.68),
    ],
    # The printed result blocks (serving-console): concurrency = "Max request concurrency:" (SGLang) or
    # "Maximum request concurrency:" (vLLM), per request = 1000 / "Median TPOT (ms):", aggregate = "Output
    # token throughput (tok/s):", accept length = SGLang's "Accept length:" or vLLM's "Acceptance length:".
    # speculators#613: vLLM with a DFlash drafter at 8 tokens, 32 concurrent; TPOT 11.77 ms
    "real/vllm_bench_console_dflash_speculators613.txt": [Expected(32, 1000 / 11.77, 2905.22, 4.77)],
    # sglang#23896, DeepSeek-V4-Flash on 4x H20 at 100 concurrent: TP4 (3/1/4) and TP4+DP4+DeepEP (1/1/2)
    "real/sglang_console_dsv4_flash_tp4_issue23896.txt": [Expected(100, 1000 / 53.27, 1222.06, 2.86)],
    "real/sglang_console_dsv4_flash_dp4_deepep_issue23896.txt": [Expected(100, 1000 / 53.49, 1249.95, 1.97)],
    # sgl-cookbook: DeepSeek-V3 with EAGLE 3/1/4 on 8x MI300X, one request at a time; TPOT 24.76 ms. The
    # aggregate (34.26) is far below 1000 / TPOT (40.4): each request's prefill counts in it, not in TPOT
    "real/sglang_console_deepseek_v3_eagle_mi300x_cookbook.txt": [Expected(1, 1000 / 24.76, 34.26, 2.61)],
    # sgl-cookbook: DeepSeek-V3.2-Exp with EAGLE 3/1/4 on 8x B200, one at a time; TPOT 9.25 ms
    "real/sglang_console_deepseek_v32_eagle_b200_cookbook.txt": [Expected(1, 1000 / 9.25, 95.62, 2.46)],
    # sgl-cookbook: DeepSeek-V3.2 at 64 requests/s capped at 1024 in flight (763.41 measured); TPOT 48.48 ms
    "real/sglang_console_deepseek_v32_c1024_cookbook.txt": [Expected(1024, 1000 / 48.48, 2530.66, 3.26)],
    # sgl-cookbook: GLM-5.1-FP8 with speculation at 100 concurrent; TPOT 36.52 ms
    "real/sglang_console_glm51_c100_cookbook.txt": [Expected(100, 1000 / 36.52, 1214.97, 3.50)],
    # sgl-cookbook: Qwen3.5-397B-A17B with NEXTN 3/1/4 on 8x H200, at 1 (TPOT 3.79 ms) and 100 (26.13 ms)
    "real/sglang_console_qwen35_nextn_c1_cookbook.txt": [Expected(1, 1000 / 3.79, 222.84, 3.12)],
    "real/sglang_console_qwen35_nextn_c100_cookbook.txt": [Expected(100, 1000 / 26.13, 1767.45, 3.31)],
    # sgl-cookbook, no speculation: Kimi-K2.5 saturated at 100 (TPOT 403.32 ms, 253.51 tok/s in all)
    "real/sglang_console_kimi_k25_c100_cookbook.txt": [Expected(100, 1000 / 403.32, 253.51, None)],
    # sgl-cookbook: Nemotron-3-Super on 4x H200 at 256 concurrent; TPOT 76.02 ms
    "real/sglang_console_nemotron3_super_c256_cookbook.txt": [Expected(256, 1000 / 76.02, 3347.77, None)],
    # sgl-cookbook: Step3-VL-10B, images, 100 concurrent: median TTFT 87 s (the queue), TPOT 5.72 ms; the
    # aggregate 523.14 is a thirty-third of 100 x 1000 / 5.72, which a queue allows (no lower bound)
    "real/sglang_console_step3_vl_c100_cookbook.txt": [Expected(100, 1000 / 5.72, 523.14, None)],
    # sgl-cookbook: gpt-oss-120b at 100 concurrent, TPOT 11.00 ms
    "real/sglang_console_gpt_oss_c100_cookbook.txt": [Expected(100, 1000 / 11.00, 7773.26, None)],
    # sgl-cookbook: Llama-4-Scout on MI300X, one at a time, TPOT 7.40 ms
    "real/sglang_console_llama4_scout_c1_cookbook.txt": [Expected(1, 1000 / 7.40, 57.42, None)],
    # sgl-cookbook: DeepSeek-R1-0528 at 100 concurrent, TPOT 41.98 ms
    "real/sglang_console_deepseek_r1_c100_cookbook.txt": [Expected(100, 1000 / 41.98, 2282.90, None)],
    # sgl-cookbook: LLaDA2.1-mini, a diffusion model, at 100 concurrent: TPOT 1.65 ms (606 tok/s a request)
    # but a median TTFT of 86 s in the queue, so 540.17 in all, a hundredth of 100 x 606 (no lower bound)
    "real/sglang_console_llada21_diffusion_c100_cookbook.txt": [Expected(100, 1000 / 1.65, 540.17, None)],
    # sgl-cookbook: DeepSeek-OCR-2, TP1, 100 concurrent, TPOT 6.54 ms
    "real/sglang_console_deepseek_ocr2_c100_cookbook.txt": [Expected(100, 1000 / 6.54, 12738.99, None)],
    # sgl-cookbook: Qwen3-Coder-Next, 64 concurrent, 8000-token outputs, TPOT 16.99 ms
    "real/sglang_console_qwen3_coder_next_c64_cookbook.txt": [Expected(64, 1000 / 16.99, 3380.83, None)],
    # vLLM recipes: GLM-5.1-FP8 with MTP at 3 tokens, 10 requests/s, no cap: Little's law, 526.57 tok/s over
    # 1000 / 34.58 per request = 18.2, so 18; acceptance length 1.64
    "real/vllm_console_glm51_mtp_rate10_recipes.txt": [Expected(18, 1000 / 34.58, 526.57, 1.64)],
    # vLLM recipes: Kimi-K2-Thinking at 100 requests/s, no cap (saturated: 227 s median TTFT): Little's
    # law, 485.78 / (1000 / 473.04) = 229.8, so 230
    "real/vllm_console_kimi_k2_thinking_rate100_recipes.txt": [Expected(230, 1000 / 473.04, 485.78, None)],
    # vLLM recipes: Qwen2.5-VL-72B, 128 prompts, the block states no rate or cap (older vLLM printed them
    # above it): Little's law, 437.46 / (1000 / 157.20) = 68.8, so 69
    "real/vllm_console_qwen25_vl_recipes.txt": [Expected(69, 1000 / 157.20, 437.46, None)],
    # vLLM recipes: Hy3-FP8, the block indented two spaces in the recipe; 32 concurrent, TPOT 30.86 ms
    "real/vllm_console_hy3_indented_recipes.txt": [Expected(32, 1000 / 30.86, 934.26, None)],
    # vLLM recipes: Seed-OSS-36B on an RTX 3090 at 2 requests/s, no cap: Little's law, 184.92 / (1000 /
    # 43.74) = 8.09, so 8
    "real/vllm_console_seed_oss_rate2_recipes.txt": [Expected(8, 1000 / 43.74, 184.92, None)],
    # LMCache#2285: vLLM 1P1D disaggregated over Mooncake, 1 request/s, no cap (5 at most in flight): Little's
    # law, 179.41 / (1000 / 15.36) = 2.76, so 3; the excerpt ends after the TPOT section
    "real/vllm_console_pd_mooncake_1p1d_lmcache2285.txt": [Expected(3, 1000 / 15.36, 179.41, None)],
    # sglang#8552: an SGLang block without a TPOT section (that version printed none), one at a time: per
    # request 1000 / "Median ITL (ms):" 8.47, no accept length to multiply it by
    "real/sglang_console_itl_only_pr8552.txt": [Expected(1, 1000 / 8.47, 113.12, None)],
    # vllm#35714 (multimodal draft_model PR, the run before the drafter): one at a time, 16 prompts; TPOT
    # 21.71 ms, 39.96 tok/s in all (each request's prefill and its 330 ms mean TTFT count in it, not in TPOT)
    "real/vllm_console_draft_model_mm_pr35714.txt": [Expected(1, 1000 / 21.71, 39.96, None)],
    # vllm#51742 (Qwen3.6-35B-A3B + DFlash, after the fix): one at a time, TPOT 2.19 ms; its Speculative
    # Decoding section is cut after "Acceptance rate (%): 31.16": a rate without the draft depth gives no
    # accept length
    "real/vllm_console_dflash_hybrid_pr51742.txt": [Expected(1, 1000 / 2.19, 371.88, None)],
    # sglang#12389 (the same reporter's in-flight batching run, 250,000-token prompts): 16 concurrent;
    # TTFT and ITL printed as 0, so per request 1000 / median TPOT 4.8304 ms; aggregate as printed
    "real/sglang_bench_serving_ifb_c16_issue12389.jsonl": [
        Expected(16, 1000 / 4.830382395428731, 3267.0925907959777, None)
    ],
    # sglang#8285: 330 requests/s capped at 330 in flight (315.98 measured), a version without a TPOT section:
    # per request 1000 / "Median ITL (ms):" 22.82; the excerpt ends there
    "real/sglang_console_c330_itl_issue8285.txt": [Expected(330, 1000 / 22.82, 12195.89, None)],
    # guidellm-bench's harness log (vLLM on Intel XPU, no speculation): five `vllm serve` starts, one per arm,
    # the second (Qwen3-30B-A3B TP2) dead before serving; each arm's median of its prefill-free intervals at
    # 1 running: gpt-oss-20b TP4 33.4, Qwen3-30B-A3B TP4 25.75, Qwen3-4B TP2 50.8, Qwen3-4B TP4 48.9 tok/s
    "real/vllm_log_guidellm_arms_xpu.log": [
        Expected(1, 33.4, 33.4, None),
        Expected(1, 25.75, 25.75, None),
        Expected(1, 50.8, 50.8, None),
        Expected(1, 48.9, 48.9, None),
    ],
    # guidellm-bench's GuideLLM 0.5 report of the Qwen3-4B TP2 arm of that log: one synchronous benchmark,
    # 0.71 in flight on average (one at a time), median TPOT 19.648 ms, mean 50.866 output tok/s
    "real/guidellm_0.5_sync_qwen3_4b_xpu.json": [
        Expected(1, 1000 / 19.64803342707455, 50.86612140156177, None)
    ],
    # sglang#9588 (EAGLE with overlap scheduling, 4 concurrent, accept length 3.46, no TPOT section): the
    # native client spreads each chunk's gap over its tokens, so an ITL entry is a token: 200 requests x
    # (792.78 - 31.66) ms of decode over 42957 - 200 tokens is 3.56 ms a token, the printed mean ITL;
    # 42757 x 3.56 / 152224 = 0.9999 token an entry (a gap carries one at least): per request 1000 / median
    # ITL 2.82, not x 3.46
    "real/sglang_console_spec_itl_per_token_pr9588.txt": [Expected(4, 1000 / 2.82, 1067.83, 3.46)],
    # vllm bench serve --save-result JSON with the server's spec_decode_* counters (dgx-spark-benchmarks, one
    # DGX Spark): per request 1000 / median TPOT, aggregate as written, accept length 1 + accepted / drafts
    # (the written spec_decode_acceptance_length); drafts per round = draft tokens / drafts.
    # Nemotron-3-Super NVFP4 with MTP (172323 / 57441 = 3 a round), 1.5 requests/s capped at 25 in flight;
    # median TPOT 272.567 ms, 70.71 tok/s; 1 + 92929 / 57441 = 2.618 (53.93 % = 92929 / 172323)
    "real/vllm_bench_serve_nemotron3_super_mtp_c25_dgxspark.json": [
        Expected(25, 1000 / 272.56683558655834, 70.71284518179225, 1 + 92929 / 57441)
    ],
    # gemma-4-26B-A4B with MTP (166600 / 41650 = 4 a round), 0.3 requests/s, no cap: Little's law, 132.35 /
    # (1000 / 93.504) = 12.38, so 12 (the client saw 26 at most); 1 + 55458 / 41650 = 2.332
    "real/vllm_bench_serve_gemma4_mtp_rate03_dgxspark.json": [
        Expected(12, 1000 / 93.5037078153666, 132.34897756829602, 1 + 55458 / 41650)
    ],
    # Muse-Glimmer-30B with a DFlash drafter at 15 tokens (1406205 / 93747 = 15 a round) accepting 2 %,
    # 1.0 requests/s, no cap, saturated (median TTFT 370 s in the queue): Little's law, 39.836 / (1000 /
    # 3375.29) = 134.46, so 134; median TPOT 3375.29 ms; 1 + 29182 / 93747 = 1.311
    "real/vllm_bench_serve_dflash15_rate1_saturated_dgxspark.json": [
        Expected(134, 1000 / 3375.294334995717, 39.835874537560855, 1 + 29182 / 93747)
    ],
    # InferenceX's vLLM bench serve JSON (its fork of benchmark_serving.py): MiniMax-M2.5 on vLLM disaggregated
    # over 16 MI355X (8 prefill + 8 decode), 512 concurrent, 1024 in / 1024 out; per request 1000 / median
    # TPOT 39.0400 ms, aggregate as written (512 x 25.61 = 13115 tok/s bounds the 12787.6 measured)
    "real/vllm_bench_serve_pd_minimax_c512_inferencex.json": [
        Expected(512, 1000 / 39.040027885107854, 12787.631138149543, None)
    ],
    # InferenceX: Qwen3.5-397B-A17B-FP8 served by ATOM with MTP on 4 MI355X, 64 concurrent, 8192 in / 1024
    # out; the file carries no spec_decode_* key, its means say the speculation (a gap a streamed chunk:
    # (588102 - 640) tokens x mean ITL 92.7646 ms / (640 x (30556.42 - 968.44) ms decoding) = 2.88 tokens a
    # gap) but not the accept length; per request 1000 / 33.0147 ms (median TPOT), aggregate as written
    # (64 x 30.29 = 1938.6 bounds the 1865.5 measured)
    "real/vllm_bench_serve_atom_mtp_c64_inferencex.json": [
        Expected(64, 1000 / 33.014678370962265, 1865.520522185723, None)
    ],
    # GuideLLM's own test assets: one synchronous benchmark, 0.998 in flight, median TPOT 4.8857 ms,
    # 198.13 output tok/s (the YAML dumps of the same report)
    "guidellm/benchmarks_stripped_v0.3.1.json": [
        Expected(1, 1000 / 4.885653033852577, 198.13346751788123, None)
    ],
    "real/guidellm_benchmarks_stripped_v0.3.1.yaml": [
        Expected(1, 1000 / 4.885653033852577, 198.13346751788123, None)
    ],
    "real/guidellm_benchmarks_stripped_a1fe883a.json": [
        Expected(1, 1000 / 4.885653033852577, 198.13346751788123, None)
    ],
    "real/guidellm_benchmarks_stripped_a1fe883a.yaml": [
        Expected(1, 1000 / 4.885653033852577, 198.13346751788123, None)
    ],
    # IBM TechXchange GPU lab, GuideLLM 0.2 sweep of granite-3.3-8b-instruct on one L40S (30 requests a
    # level, 512 in / 256 out), its printed Benchmarks Stats: concurrency = the Concurrency column rounded
    # (29.63 -> 30, 3.26 -> 3, 5.31 -> 5, 7.13 -> 7, 8.82 -> 9, 10.36 -> 10, 12.26 -> 12, 13.52 -> 14,
    # 14.69 -> 15), per request 1000 / the TPOT median, aggregate = the Out Tok/sec mean, as printed
    "real/guidellm_console_granite_1gpu_sweep_techxchange.txt": [
        Expected(1, 1000 / 25.1, 39.5, None),
        Expected(30, 1000 / 36.2, 752.3, None),
        Expected(3, 1000 / 27.1, 119.0, None),
        Expected(5, 1000 / 28.1, 187.3, None),
        Expected(7, 1000 / 29.0, 246.0, None),
        Expected(9, 1000 / 29.7, 296.9, None),
        Expected(10, 1000 / 30.3, 341.0, None),
        Expected(12, 1000 / 31.6, 386.3, None),
        Expected(14, 1000 / 32.4, 418.0, None),
        Expected(15, 1000 / 33.1, 445.5, None),
    ],
    # the same sweep with the model on two L40S: 29.65 -> 30, 2.93 -> 3, 4.81 -> 5, 6.66 -> 7, 8.67 -> 9,
    # 10.34 -> 10, 11.98 -> 12, 13.84 -> 14, 15.13 -> 15; the throughput run's 30 in flight at 1000 / 26.7
    # = 37.45 tok/s each would be 1123.6 tok/s, 996.1 measured (requests queue: a lower aggregate is
    # normal, never refused)
    "real/guidellm_console_granite_2gpu_sweep_techxchange.txt": [
        Expected(1, 1000 / 16.5, 58.7, None),
        Expected(30, 1000 / 26.7, 996.1, None),
        Expected(3, 1000 / 17.5, 165.1, None),
        Expected(5, 1000 / 18.6, 258.1, None),
        Expected(7, 1000 / 19.7, 339.2, None),
        Expected(9, 1000 / 20.6, 421.3, None),
        Expected(10, 1000 / 21.3, 483.5, None),
        Expected(12, 1000 / 22.4, 536.3, None),
        Expected(14, 1000 / 23.4, 590.9, None),
        Expected(15, 1000 / 24.2, 632.6, None),
    ],
}


@pytest.mark.parametrize("name", sorted(GATE))
def test_a_real_file_loads_with_its_authors_numbers(engine, name):
    load(engine, FIXTURES / name, IngestPolicy(link=LinkOptions(deployment="real")))
    found = [
        Expected(b.concurrency, b.decode_tps, b.output_throughput, b.accept_length)
        for b in benchmarks(engine)
    ]
    expected = GATE[name]
    assert len(found) == len(expected), found
    for got, want in zip(found, expected, strict=True):
        assert got.concurrency == want.concurrency
        assert got.decode_tps == pytest.approx(want.decode_tps)
        assert got.output_throughput == pytest.approx(want.output_throughput)
        assert got.accept_length == pytest.approx(want.accept_length)


def test_specbundle_loads_whole_with_its_published_rows(engine):
    """SpecBundle's data.json: 440 drafter rows and 60 baselines (one per target, benchmark and batch size,
    repeated per setting at one speed). Qwen3-30B-A3B on gsm8k at batch 8, 3/1/4: the baseline at
    1071.294 tok/s and the SpecForge drafter at 1488.365 tok/s with accept length 2.640, per request / 8."""
    load(engine, REAL / "specbundle-data.json")
    stored = benchmarks(engine)
    drafters = [b for b in stored if b.speculative_algorithm is not None]
    assert len(drafters) == 440 and len(stored) - len(drafters) == 60
    qwen = [b for b in stored if b.dataset == "gsm8k" and "Qwen3-30B-A3B-Instruct-2507" in b.deployment.name]
    base = next(b for b in qwen if b.speculative_algorithm is None and b.concurrency == 8)
    assert base.decode_tps == pytest.approx(1071.2940027174511 / 8)
    (drafter,) = [
        b
        for b in qwen
        if b.speculative_algorithm
        and (b.num_steps, b.topk, b.num_draft_tokens, b.concurrency) == (3, 1, 4, 8)
    ]
    assert drafter.decode_tps == pytest.approx(1488.3645940190918 / 8)
    assert drafter.accept_length == pytest.approx(2.6400593352844486)


def test_each_arm_of_a_harness_log_has_its_own_start_configuration(engine):
    """guidellm-bench's log: the Qwen3-30B-A3B TP2 start (line 468) died before serving and the TP4 start
    (line 704) served, so the second arm is TP4 from line 704, not the dead start's TP2."""
    load(engine, REAL / "vllm_log_guidellm_arms_xpu.log", IngestPolicy(link=LinkOptions(deployment="real")))
    arms = [
        (b.raw["config"]["model"], b.raw["config"]["tp_size"], b.raw["server_start_line"])
        for b in benchmarks(engine)
    ]
    assert arms == [
        ("openai/gpt-oss-20b", 4, 1),
        ("Qwen/Qwen3-30B-A3B", 4, 704),
        ("Qwen/Qwen3-4B-Thinking-2507", 2, 1144),
        ("Qwen/Qwen3-4B-Thinking-2507", 4, 1499),
    ]


def test_the_gate_holds_every_real_file():
    """Every file of tests/fixtures/real/ but the licences and notes is in the gate."""
    held = {name.split("/", 1)[1] for name in GATE if name.startswith("real/")} | {"specbundle-data.json"}
    files = {p.name for p in REAL.iterdir() if not p.name.startswith("LICENSE") and p.suffix != ".md"}
    assert files == held


def test_a_bench_serve_result_keeps_the_servers_per_position_acceptance(engine):
    """dgx-spark-benchmarks' Nemotron-3-Super MTP run: 172323 draft tokens over 57441 drafts is 3 a round,
    and the per-position acceptance the file writes as fractions (0.7668, 0.5119, 0.3391) is stored as they
    are: they sum to 92929 / 57441 = 1.618, the accept length less the bonus token."""
    path = REAL / "vllm_bench_serve_nemotron3_super_mtp_c25_dgxspark.json"
    load(engine, path, IngestPolicy(link=LinkOptions(deployment="real")))
    (stored,) = benchmarks(engine)
    assert stored.num_steps == 3
    assert stored.position_survival == pytest.approx(
        [0.7667693807559061, 0.5119339844362041, 0.33911317699900767]
    )
    assert sum(stored.position_survival) == pytest.approx(92929 / 57441)


def test_a_run_that_streamed_several_tokens_a_chunk_is_never_a_step_without_speculation(engine):
    """InferenceX's ATOM MTP run has no spec_decode_* key, but its 587,462 tokens after the first ones took
    640 x (30556.42 - 968.44) ms over gaps of 92.7646 ms on average: 2.88 tokens a streamed chunk. It is
    stored as speculation of an unknown kind, not as the deployment's baseline. Its disaggregated MiniMax
    run without speculation streams one token a chunk and stays a baseline."""
    policy = IngestPolicy(link=LinkOptions(deployment="real"))
    load(engine, REAL / "vllm_bench_serve_atom_mtp_c64_inferencex.json", policy)
    load(engine, REAL / "vllm_bench_serve_pd_minimax_c512_inferencex.json", policy)
    atom, minimax = benchmarks(engine)
    assert atom.speculative_algorithm == "unknown" and atom.accept_length is None
    assert atom.decode_tps == pytest.approx(1000 / 33.014678370962265)
    assert minimax.speculative_algorithm is None

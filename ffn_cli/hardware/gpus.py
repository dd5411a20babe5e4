"""The GPU table: memory, memory bandwidth and dense peak rate per dtype of each known GPU.

Pure data, no torch and nothing else of ours but the words that say a row's scope. Every number is a vendor's datasheet or
whitepaper figure, or, for a GPU without a public datasheet (the H800, A800, L20, the RTX PRO
6000), the figure the public tables agree on (docs/hardware.md cites each source by its
`source` key); a figure the sources dispute is left out and the row's notes say so. Peaks are DENSE:
where a vendor prints only the "with sparsity" figure (2:4 structured sparsity, which a dense
GEMM never uses), the table holds half of it. A dtype the chip has no tensor-core rate for, or
whose rate the sources do not give, is absent: it is never guessed.

Units: memory in GB (10⁹ bytes, as vendors state it), bandwidth in GB/s, rates in TFLOP/s
(TOP/s for int8). bf16/fp16 rates are with float32 accumulation, as PyTorch's GEMMs run.

Beside the vendor's memory figure, `driver_mib` is the total the driver reports (`nvidia-smi`'s
"MiB" column, 2²⁰ bytes), what a process can actually allocate from; each from a published log
named in DRIVER_SOURCES. `link_gbps` is the GPU-to-GPU bandwidth the datasheet prints (NVLink
or PCIe, both directions together, per GPU), what tensor- and expert-parallel communication
runs over. A figure no source gives is None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from ffn_cli.i18n import N_, Message, _

__all__ = ["DRIVER_SOURCES", "DTYPES", "GPU", "GPUS", "SERVER_GPUS", "SOURCES", "gpu_for_device_name", "ridge_flop_per_byte"]

MIB = 1 << 20

# Table columns, in the order `ffn hardware` prints them.
DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8")
SERVER_GPUS = 8  # the GPUs one server holds, an HGX board's or a PCIe server's


@dataclass(frozen=True)
class GPU:
    """One row of the table. `key` is what --gpu takes; `aliases` are other names for it;
    `pattern` is searched (case-insensitive) in torch.cuda.get_device_name()."""

    key: str
    name: str
    pattern: str
    memory_gb: float
    bandwidth_gbps: float
    tflops: dict[str, float]
    source: str  # a key of SOURCES
    aliases: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())  # what the sources leave out, in words
    driver_mib: int | None = None  # the total nvidia-smi / rocm-smi reports, in MiB
    driver_source: str = ""  # a key of DRIVER_SOURCES
    link_gbps: float | None = None  # GPU-to-GPU, both directions together (as datasheets print it)
    link: str = ""  # what that link is: "NVLink 4", "PCIe Gen4 x16"
    # The GPUs one link domain joins: an HGX board's or a server's 8; a Grace Blackwell NVL72 rack's
    # 72 (the form GB200 and GB300 are deployed in). Beyond it a network carries part of the traffic.
    link_domain: int = SERVER_GPUS
    # Past a bridge's domain, in the same server: the link between the bridges (the H100 NVL's and the
    # H200 NVL's PCIe Gen5), GB/s both directions together, and its name; None where the domain is a server's.
    beyond_domain_gbps: float | None = None
    beyond_domain_link: str = ""
    # What of the product the row is, where the product is more than one GPU (a Grace Blackwell
    # superchip's figures are per GPU): an English id, said after the name in the reader's language.
    scope: str = ""

    def spans_bridges(self, gpus: int) -> bool:
        """Whether `gpus` NVLink-bridged cards span more than one bridge (what crosses runs over the PCIe between them)."""
        return self.beyond_domain_gbps is not None and gpus > self.link_domain

    def spans_network(self, gpus: int) -> bool:
        """Whether `gpus` GPUs span more than one server or rack its links join (a network carries part
        of their traffic): past the domain, or past a server of bridged cards."""
        return gpus > self.network_past

    @property
    def network_past(self) -> int:
        """The GPUs past which a network carries part of the traffic: the domain's, a server's for bridged cards."""
        return SERVER_GPUS if self.beyond_domain_gbps is not None else self.link_domain

    @property
    def full_name(self) -> str:
        """The name with its scope, in English: "NVIDIA GB300 (per GPU)"."""
        return f"{self.name} ({self.scope})" if self.scope else self.name

    @property
    def label(self) -> str:
        """The name with its scope in the reader's language: "NVIDIA GB300（每 GPU）"."""
        return _("{name} ({scope})").format(name=self.name, scope=_(self.scope)) if self.scope else self.name

    @property
    def memory_bytes(self) -> int:
        """What one process can allocate: the driver's total where a source gives it, else the
        vendor's figure in 10⁹ bytes (`memory_from_driver` says which)."""
        return self.driver_mib * MIB if self.driver_mib is not None else round(self.memory_gb * 1e9)

    @property
    def runtime(self) -> str:
        """The stack a process on it runs on: AMD's cards run ROCm (HIP, RCCL), NVIDIA's CUDA (NCCL)."""
        return "ROCm" if self.name.startswith("AMD ") else "CUDA"

    @property
    def memory_from_driver(self) -> bool:
        return self.driver_mib is not None

    def tflops_for(self, dtype: str) -> float | None:
        return self.tflops.get(dtype)

    def ridge(self, dtype: str) -> float | None:
        """FLOP per byte where compute time equals memory time for this dtype's peak."""
        peak = self.tflops.get(dtype)
        return None if peak is None else ridge_flop_per_byte(peak, self.bandwidth_gbps)


def ridge_flop_per_byte(tflops: float, bandwidth_gbps: float) -> float:
    """FLOP per byte at which compute time equals memory time: below it a run is memory-bound."""
    return tflops * 1e12 / (bandwidth_gbps * 1e9)


def _r(**rates: float | None) -> dict[str, float]:
    return {k: v for k, v in rates.items() if v is not None}


# source key → (document, where it is published). docs/hardware.md cites each one.
SOURCES: dict[str, tuple[str, str]] = {
    "nvidia-h100": ("NVIDIA H100 Tensor Core GPU datasheet", "https://www.nvidia.com/en-us/data-center/h100/"),
    "nvidia-h200": ("NVIDIA H200 Tensor Core GPU datasheet", "https://www.nvidia.com/en-us/data-center/h200/"),
    "nvidia-h20": ("NVIDIA H20 product brief (figures as NVIDIA's partners publish them)", "NVIDIA HGX H20 product brief"),
    "nvidia-a100": ("NVIDIA A100 Tensor Core GPU datasheet", "https://www.nvidia.com/en-us/data-center/a100/"),
    "nvidia-b200": ("NVIDIA HGX B200 datasheet (8 GPUs; per GPU = ÷ 8)", "https://www.nvidia.com/en-us/data-center/hgx/"),
    "nvidia-l4": ("NVIDIA L4 Tensor Core GPU datasheet", "https://www.nvidia.com/en-us/data-center/l4/"),
    "nvidia-l40s": ("NVIDIA L40S GPU datasheet", "https://www.nvidia.com/en-us/data-center/l40s/"),
    "nvidia-l40": ("NVIDIA L40 GPU datasheet", "https://www.nvidia.com/en-us/data-center/l40/"),
    "nvidia-a10": ("NVIDIA A10 Tensor Core GPU datasheet", "https://www.nvidia.com/en-us/data-center/products/a10-gpu/"),
    "aws-g5": ("Amazon EC2 G5 instances (A10G: memory and bandwidth only)", "https://aws.amazon.com/ec2/instance-types/g5/"),
    "nvidia-ada": ("NVIDIA Ada GPU Architecture whitepaper, appendix (GeForce RTX 4090)", "NVIDIA ADA GPU ARCHITECTURE, v2.01"),
    "nvidia-rtx-blackwell": (
        "NVIDIA RTX Blackwell GPU Architecture whitepaper (GeForce RTX 5090)",
        "https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf",
    ),
    "nvidia-ga102": ("NVIDIA Ampere GA102 GPU Architecture whitepaper (GeForce RTX 3090)", "NVIDIA AMPERE GA102 GPU ARCHITECTURE"),
    "nvidia-v100": ("NVIDIA V100 Tensor Core GPU datasheet", "https://www.nvidia.com/en-us/data-center/v100/"),
    "nvidia-t4": ("NVIDIA T4 Tensor Core GPU datasheet", "https://www.nvidia.com/en-us/data-center/tesla-t4/"),
    "amd-mi300x": ("AMD Instinct MI300X accelerator datasheet", "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html"),
    "amd-mi325x": ("AMD Instinct MI325X accelerator datasheet", "https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html"),
    "aiconfigurator": (
        "NVIDIA ai-dynamo/aiconfigurator system files (h800_sxm.yaml, rtxpro6000_blackwell_server.yaml)",
        "https://github.com/ai-dynamo/aiconfigurator",
    ),
    "llm-viewer": ("LLM-Viewer hardwares/hardware_params.py (its A800 entry)", "https://github.com/hahnyuan/LLM-Viewer"),
    "tomshardware-h20": ("Tom's Hardware's table of NVIDIA's China GPUs (H20, L20, L2)", "https://www.tomshardware.com"),
    "nvidia-b300": ("NVIDIA HGX B300 figures per GPU, as Glenn K. Lockwood's B300 page collects them", "https://www.glennklockwood.com"),
    "tomshardware-blackwell-ultra": (
        "Tom's Hardware's Blackwell and Blackwell Ultra table (GB200, GB300 per GPU)",
        "https://www.tomshardware.com",
    ),
    "amd-rocm-gpu-specs": ("AMD ROCm documentation: GPU hardware specifications", "https://rocm.docs.amd.com (reference/gpu-specs)"),
    # --gpu this: no datasheet, the machine's own profile (hardware/profile.py)
    "measured": ("measured on this machine by ffn hardware --measure", "$XDG_CACHE_HOME/ffn/profiles/this.json"),
}

_SPARSE_ONLY = Message(N_("the datasheet prints int8/fp8/bf16/tf32 with sparsity: halved here"))
_NO_BF16 = Message(N_("no bf16"))
_NO_RATES_A10G = Message(N_("no vendor datasheet gives the A10G's peak rates: left empty"))
_HOPPER = _r(fp64=67, fp32=67, tf32=494.5, bf16=989.5, fp16=989.5, fp8=1979, int8=1979)
_MI300 = _r(fp64=163.4, fp32=163.4, tf32=653.7, bf16=1307.4, fp16=1307.4, fp8=2614.9, int8=2614.9)
_A100 = _r(fp64=19.5, fp32=19.5, tf32=156, bf16=312, fp16=312, int8=624)

# Most specific pattern first: the first that matches a CUDA device name wins ("H100 PCIe" before "H100").
GPUS: tuple[GPU, ...] = (
    GPU(
        "h200-nvl",
        "NVIDIA H200 NVL",
        r"H200.*NVL",
        141,
        4800,
        _r(fp64=60, fp32=60, tf32=417.5, bf16=835.5, fp16=835.5, fp8=1670.5, int8=1670.5),
        "nvidia-h200",
        notes=(_SPARSE_ONLY,),
    ),
    GPU("h200", "NVIDIA H200 SXM", r"H200", 141, 4800, _HOPPER, "nvidia-h200", ("h200-sxm",), (_SPARSE_ONLY,)),
    GPU(
        "h100-pcie",
        "NVIDIA H100 PCIe",
        r"H100.*PCIe",
        80,
        2000,
        _r(fp64=51, fp32=51, tf32=378, bf16=756.5, fp16=756.5, fp8=1513, int8=1513),
        "nvidia-h100",
        notes=(_SPARSE_ONLY,),
    ),
    GPU(
        "h100-nvl",
        "NVIDIA H100 NVL",
        r"H100.*NVL",
        94,
        3900,
        _r(fp64=60, fp32=60, tf32=417.5, bf16=835.5, fp16=835.5, fp8=1670.5, int8=1670.5),
        "nvidia-h100",
        notes=(_SPARSE_ONLY,),
    ),
    GPU("h100", "NVIDIA H100 SXM", r"H100", 80, 3350, _HOPPER, "nvidia-h100", ("h100-sxm", "h100-sxm5"), (_SPARSE_ONLY,)),
    GPU(
        "h800",
        "NVIDIA H800 SXM",
        r"H800",
        80,
        3350,
        _r(bf16=989.5, fp16=989.5, fp8=1979),
        "aiconfigurator",
        ("h800-sxm",),
        (Message(N_("the H100 SXM's rates with NVLink cut to 400 GB/s; fp64, fp32, tf32 and int8 not given")),),
    ),
    GPU(
        "h20",
        "NVIDIA H20",
        r"\bH20\b",
        96,
        4000,
        _r(fp32=44, tf32=74, bf16=148, fp16=148, fp8=296, int8=296),
        "nvidia-h20",
        notes=(
            Message(N_("no fp64 tensor rate given; the sources disagree on the driver's total (97,871 or 98,304 MiB): the lower is used")),
        ),
    ),
    GPU(
        "gb300",
        "NVIDIA GB300",
        r"GB300",
        288,
        8000,
        _r(bf16=2500, fp8=5000, fp4=15000),
        "tomshardware-blackwell-ultra",
        notes=(Message(N_("one Blackwell Ultra GPU of a Grace Blackwell superchip; fp32, tf32, fp16 and int8 not given")),),
        scope="per GPU",
    ),
    GPU(
        "gb200",
        "NVIDIA GB200",
        r"GB200",
        186,
        8000,
        _r(bf16=2500, fp8=5000, fp4=10000),
        "tomshardware-blackwell-ultra",
        notes=(Message(N_("one Blackwell GPU of a Grace Blackwell superchip; fp32, tf32, fp16 and int8 not given")),),
        scope="per GPU",
    ),
    GPU(
        "b300",
        "NVIDIA B300 (HGX)",
        r"B300",
        288,
        7700,
        _r(bf16=2250, fp8=4500),
        "nvidia-b300",
        notes=(
            Message(
                N_(
                    "the sources disagree on fp4 (13,125 or 14,000 dense): left empty; the sources disagree on the bandwidth "
                    "(7.7 or 8 TB/s): the lower is used; 288 GB is decimal here (the driver's 275,040 MiB)"
                )
            ),
        ),
    ),
    GPU(
        "b200",
        "NVIDIA B200 (HGX)",
        r"B200",
        180,
        7700,
        _r(fp64=37, fp32=75, tf32=1100, bf16=2250, fp16=2250, fp8=4500, fp4=9000, int8=4500),
        "nvidia-b200",
        notes=(
            Message(
                N_(
                    "HGX B200 at 1,000 W per GPU; 7.7 TB/s and TF32 1,100 dense are NVIDIA's current per-GPU figures "
                    "(earlier 8 TB/s and 1,125); the datasheet prints fp4…tf32 with sparsity: halved here"
                )
            ),
        ),
    ),
    GPU(
        "a800",
        "NVIDIA A800 SXM4 80GB",
        r"A800",
        80,
        2039,
        _r(bf16=312),
        "llm-viewer",
        ("a800-80gb",),
        (
            Message(
                N_(
                    "the A100's bf16 rate; the sources disagree on its NVLink bandwidth (400 GB/s in one): left empty;"
                    " other rates not given"
                )
            ),
        ),
    ),
    GPU("a100-pcie-80gb", "NVIDIA A100 PCIe 80GB", r"A100.*PCIe.*80GB|A100 80GB PCIe", 80, 1935, _A100, "nvidia-a100"),
    GPU("a100-pcie-40gb", "NVIDIA A100 PCIe 40GB", r"A100.*PCIe", 40, 1555, _A100, "nvidia-a100"),
    GPU("a100-40gb", "NVIDIA A100 SXM4 40GB", r"A100.*40GB", 40, 1555, _A100, "nvidia-a100", ("a100-sxm4-40gb",)),
    GPU("a100-80gb", "NVIDIA A100 SXM4 80GB", r"A100", 80, 2039, _A100, "nvidia-a100", ("a100", "a100-sxm4-80gb")),
    GPU("a10g", "NVIDIA A10G", r"\bA10G\b", 24, 600, {}, "aws-g5", notes=(_NO_RATES_A10G,)),
    GPU("a10", "NVIDIA A10", r"\bA10\b", 24, 600, _r(fp32=31.2, tf32=62.5, bf16=125, fp16=125, int8=250), "nvidia-a10"),
    GPU("l40s", "NVIDIA L40S", r"\bL40S\b", 48, 864, _r(fp32=91.6, tf32=183, bf16=362.05, fp16=362.05, fp8=733, int8=733), "nvidia-l40s"),
    GPU("l40", "NVIDIA L40", r"\bL40\b", 48, 864, _r(fp32=90.5, tf32=90.5, bf16=181.05, fp16=181.05, fp8=362, int8=362), "nvidia-l40"),
    GPU(
        "l20",
        "NVIDIA L20",
        r"\bL20\b",
        48,
        864,
        _r(bf16=119.5, fp8=239),
        "tomshardware-h20",
        notes=(Message(N_("the driver reports 46,068 MiB with ECC on (the default), 49,140 with it off; other rates not given")),),
    ),
    GPU("l4", "NVIDIA L4", r"\bL4\b", 24, 300, _r(fp32=30.3, tf32=60, bf16=121, fp16=121, fp8=242.5, int8=242.5), "nvidia-l4"),
    GPU(
        "rtx-5090",
        "NVIDIA GeForce RTX 5090",
        r"RTX 5090",
        32,
        1792,
        _r(fp32=104.8, tf32=104.8, bf16=209.5, fp16=209.5, fp8=419, fp4=1676),
        "nvidia-rtx-blackwell",
        ("5090",),
        (
            Message(
                N_("bf16/fp8 with fp32 accumulation; fp4 is NVIDIA's 3,352 AI TOPS (with sparsity) halved; int8 not found in the sources")
            ),
        ),
    ),
    GPU(
        "rtx-pro-6000",
        "NVIDIA RTX PRO 6000 Blackwell",
        r"RTX PRO 6000 Blackwell",
        96,
        1792,
        {},
        "aiconfigurator",
        ("rtx-pro-6000-blackwell",),
        (Message(N_("NVIDIA prints only sparse AI TOPS; the sources disagree on the dense rates (bf16 468 or 500): left empty")),),
    ),
    GPU(
        "rtx-4090",
        "NVIDIA GeForce RTX 4090",
        r"RTX 4090",
        24,
        1008,
        _r(fp32=82.6, tf32=82.6, bf16=165.2, fp16=165.2, fp8=330.3, int8=660.6),
        "nvidia-ada",
        ("4090",),
        (Message(N_("bf16/fp8 with fp32 accumulation (double with fp16 accumulation)")),),
    ),
    GPU(
        "rtx-3090",
        "NVIDIA GeForce RTX 3090",
        r"RTX 3090(?! Ti)",
        24,
        936,
        _r(fp32=35.6, tf32=35.6, bf16=71, fp16=71, int8=284),
        "nvidia-ga102",
        ("3090",),
    ),
    GPU("v100-pcie", "NVIDIA V100 PCIe", r"V100.*PCIe", 32, 900, _r(fp64=7, fp32=14, fp16=112), "nvidia-v100", notes=(_NO_BF16,)),
    GPU("v100", "NVIDIA V100 SXM2", r"V100", 32, 900, _r(fp64=7.8, fp32=15.7, fp16=125), "nvidia-v100", ("v100-sxm2",), (_NO_BF16,)),
    GPU("t4", "NVIDIA T4", r"\bT4\b", 16, 320, _r(fp32=8.1, fp16=65, int8=130), "nvidia-t4", notes=(_NO_BF16,)),
    GPU(
        "mi355x",
        "AMD Instinct MI355X",
        r"MI355X",
        288,
        8000,
        {},
        "amd-rocm-gpu-specs",
        notes=(
            Message(
                N_(
                    "the sources disagree on which of AMD's rates are dense (bf16 about "
                    "2,500?) and on the link (about 1,075 GB/s?): left empty"
                )
            ),
        ),
    ),
    GPU(
        "mi325x",
        "AMD Instinct MI325X",
        r"MI325X",
        256,
        6000,
        _MI300,
        "amd-mi325x",
        notes=(Message(N_("AMD prints dense rates; sparsity doubles fp8, bf16, tf32")),),
    ),
    GPU(
        "mi300x",
        "AMD Instinct MI300X",
        r"MI300X",
        192,
        5300,
        _MI300,
        "amd-mi300x",
        notes=(Message(N_("AMD prints dense rates; sparsity doubles fp8, bf16, tf32")),),
    ),
)


# source key → (what it shows, where it is published): the memory total the driver reports.
DRIVER_SOURCES: dict[str, tuple[str, str]] = {
    "smi-h200": ("NVML (nvidia-smi) on an H200 SXM: 143,771 MiB", "https://thundergolfer.com/blog/nvidia-gpu-memory-capacity"),
    "nccl-1264": ("nvidia-smi on 8 × H100 80GB HBM3, driver 550.54.15: 81559MiB each", "https://github.com/NVIDIA/nccl/issues/1264"),
    "modal-2797": (
        "nvidia-smi totals on Modal's GPUs (H100 81559, A100 80GB 81920, A100 40GB 40960, A10 23028, L40S 46068, L4 23034, T4 15360 MiB)",
        "https://github.com/modal-labs/modal-client/pull/2797",
    ),
    "club-3090-617": ("nvidia-smi on a GeForce RTX 5090, driver 595.71.05: 32607MiB", "https://github.com/noonghunna/club-3090/issues/617"),
    "club-3090-1139": ("nvidia-smi on GeForce RTX 3090s, driver 580.173.02: 24576MiB", "https://github.com/noonghunna/club-3090/pull/1139"),
    "cachecha-v100": (
        "nvidia-smi on 4 × Tesla V100-PCIE (32 GB), driver 410.48: 32480MiB",
        "https://blog.cachecha.com/csdn/kunhe0512/126265050.html",
    ),
    "rocminfo-mi300x": (
        "rocminfo on 8 × AMD Instinct MI300X: each GPU's memory pool 201,310,208 KB (196,592 MiB)",
        "https://github.com/stas00/ml-engineering/blob/master/compute/accelerator/amd/debug.md",
    ),
    "trtllm-10278": (
        "nvidia-smi on 8 × B200, driver 580.95.05: 183359MiB each",
        "https://github.com/NVIDIA/TensorRT-LLM/issues/10278",
    ),
    "smi-logs-2026": (
        "nvidia-smi totals in public logs: H800 81559, A800 80GB 81920, L20 46068 (ECC on), B300 275040, "
        "GB200 189471, GB300 284208, RTX PRO 6000 Blackwell 97887, H20 97871 (older logs 98304) MiB",
        "public nvidia-smi logs as a 2026 survey of GPU sources lists them (no one log gives them all)",
    ),
}

# key → (MiB the driver reports, its DRIVER_SOURCES key)
_DRIVER: dict[str, tuple[int, str]] = {
    "h200": (143771, "smi-h200"),
    "h100": (81559, "nccl-1264"),
    "a100-80gb": (81920, "modal-2797"),
    "a100-40gb": (40960, "modal-2797"),
    "a10": (23028, "modal-2797"),
    "l40s": (46068, "modal-2797"),
    "l4": (23034, "modal-2797"),
    "t4": (15360, "modal-2797"),
    "rtx-5090": (32607, "club-3090-617"),
    "rtx-3090": (24576, "club-3090-1139"),
    "v100-pcie": (32480, "cachecha-v100"),
    "h800": (81559, "smi-logs-2026"),
    "a800": (81920, "smi-logs-2026"),
    "l20": (46068, "smi-logs-2026"),
    "b200": (183359, "trtllm-10278"),
    "b300": (275040, "smi-logs-2026"),
    "gb200": (189471, "smi-logs-2026"),
    "gb300": (284208, "smi-logs-2026"),
    "rtx-pro-6000": (97887, "smi-logs-2026"),
    "h20": (97871, "smi-logs-2026"),  # the lower of the two the logs show
    "mi300x": (196592, "rocminfo-mi300x"),
}
# key → (GB/s GPU to GPU, both directions, and the link), as the row's own datasheet prints it.
# A PCIe card's NVLink bridge joins a few cards (its link domain, below): the H100 NVL's pairs, the
# H200 NVL's 2 or 4. A layout of more runs its collectives over the slower PCIe between the bridges
# (_BEYOND_BRIDGE): a ring runs at its slowest link, at which the answer prices comm.
_PCIE4, _PCIE5 = (64, "PCIe Gen4 x16"), (128, "PCIe Gen5 x16")
_LINKS: dict[str, tuple[float, str]] = {
    "h200-nvl": (900, N_("NVLink bridge, 2- or 4-way")),  # words: said in the reader's language
    "h200": (900, "NVLink 4"),
    "h100-pcie": _PCIE5,
    "h100-nvl": (600, N_("NVLink bridge, pairs")),
    "h100": (900, "NVLink 4"),
    "h20": (900, "NVLink 4"),
    "h800": (400, "NVLink 4"),
    "gb300": (1800, "NVLink 5 (NVL72)"),
    "gb200": (1800, "NVLink 5 (NVL72)"),
    "b300": (1800, "NVLink 5"),
    "l20": _PCIE4,
    "rtx-pro-6000": _PCIE5,
    "b200": (1800, "NVLink 5"),
    "a100-pcie-80gb": _PCIE4,
    "a100-pcie-40gb": _PCIE4,
    "a100-40gb": (600, "NVLink 3"),
    "a100-80gb": (600, "NVLink 3"),
    "a10": _PCIE4,
    "l40s": _PCIE4,
    "l40": _PCIE4,
    "l4": _PCIE4,
    "v100-pcie": (32, "PCIe Gen3 x16"),
    "v100": (300, "NVLink 2"),
    "t4": (32, "PCIe Gen3 x16"),
    "mi325x": (896, "7 × Infinity Fabric"),
    "mi300x": (896, "7 × Infinity Fabric"),
}


# A link domain wider than a server's 8: GB200 NVL72 and GB300 NVL72 join 72 GPUs by NVLink 5 switches
# (NVIDIA's GB200 NVL72 and GB300 NVL72 pages); narrower, a bridge's cards, PCIe Gen5 between bridges.
_DOMAINS = {"gb300": 72, "gb200": 72, "h100-nvl": 2, "h200-nvl": 4}
_BEYOND_BRIDGE = {"h100-nvl": _PCIE5, "h200-nvl": _PCIE5}


def _with_driver_and_link(gpu: GPU) -> GPU:
    mib, source = _DRIVER.get(gpu.key, (None, ""))
    gbps, link = _LINKS.get(gpu.key, (None, ""))
    beyond, between = _BEYOND_BRIDGE.get(gpu.key, (None, ""))
    return replace(gpu, driver_mib=mib, driver_source=source, link_gbps=gbps, link=link, link_domain=_DOMAINS.get(gpu.key, SERVER_GPUS),
                   beyond_domain_gbps=beyond, beyond_domain_link=between)  # fmt: skip


GPUS = tuple(_with_driver_and_link(g) for g in GPUS)


def gpu_for_device_name(device_name: str) -> GPU | None:
    """The row for a CUDA device name such as 'NVIDIA H100 80GB HBM3', or None."""
    for gpu in GPUS:
        if re.search(gpu.pattern, device_name, flags=re.IGNORECASE):
            return gpu
    return None

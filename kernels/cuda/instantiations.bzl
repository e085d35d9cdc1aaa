"""The CUDA instantiation files of kernels/cuda, from one list.

Each curve's MSM, fixed-base multiplication, NTT and Groth16 kernels are
templates (msm.cuh, fixed_base.cuh, ntt.cuh, groth16_kernels.cuh) that a tiny
.cu file instantiates for one curve and group. The point kernels are split
further into parts, one .cu each (msm_launch.cuh, fixed_base_launch.cuh), so
that nvcc compiles them in parallel: one translation unit per part.

The lists below are the only place those files are named. Bazel writes them
with a genrule (cuda_instantiations, used in kernels/cuda/BUILD), and
tests/gpu/build_bundle.sh, the plain nvcc/g++ build for GPU hosts without
Bazel, runs this file with python3 and writes the same files from
cuda_instantiation_files(). So keep it Starlark that is also Python: no
load(), only constants and functions of them (`native` is used only inside
the macro, which python3 never calls).

Adding a part: its launcher (msm_launch.cuh or fixed_base_launch.cuh) and
its ZKFARM_GPU_*_PART_<part> macro, then its name in the list here.
"""

# Curve file stem -> the type names the instantiation macros take.
CUDA_CURVES = {
    "bn254": {
        "name": "Bn254",
        "fq": "zkfarm::Bn254FqParams",
        "fr_params": "zkfarm::Bn254FrParams",
        "fr": "zkfarm::Bn254Fr",
    },
    "bls12_381": {
        "name": "Bls12381",
        "fq": "zkfarm::Bls12381FqParams",
        "fr_params": "zkfarm::Bls12381FrParams",
        "fr": "zkfarm::Bls12381Fr",
    },
}

# Group -> extension degree of its base field.
CUDA_GROUPS = {"g1": 1, "g2": 2}

# The MSM's point kernels, one part file each (msm_kernels.cuh,
# batch_affine.cuh): the bucket accumulation at 1, 3 or 4 blocks per SM
# (G2 uses 1 only), the record levels, the bucket reduction's segments and
# scaling, the group reduction, the sum of the ones, and the shifted bases'
# doublings.
MSM_PARTS = {
    "g1": [
        "accumulate1",
        "accumulate3",
        "accumulate4",
        "bucket_segment",
        "double_rows",
        "records",
        "reduce_group",
        "segment_scale",
        "sum_ones",
    ],
    "g2": [
        "accumulate1",
        "bucket_segment",
        "double_rows",
        "records",
        "reduce_group",
        "segment_scale",
        "sum_ones",
    ],
}

# The fixed-base multiplication's kernels (fixed_base_kernels.cuh), one part
# file each, for G1 and G2.
FIXED_BASE_PARTS = ["accumulate", "table", "to_affine"]

# The kinds of file, each the sources of one cuda_library in BUILD.
CUDA_INSTANTIATION_KINDS = ["msm", "fixed_base", "ntt", "groth16_kernels"]

def _file(purpose, includes, lines):
    text = "// Generated from kernels/cuda/instantiations.bzl (do not edit): " + purpose + "\n"
    for include in includes:
        text += "#include \"" + include + "\"\n"
    return text + "\n" + "\n".join(lines) + "\n"

def cuda_instantiation_files(kind):
    """{file name: text} of the instantiation files of one kind."""
    files = {}
    for stem in CUDA_CURVES:
        curve = CUDA_CURVES[stem]
        if kind == "msm":
            for group in CUDA_GROUPS:
                degree = CUDA_GROUPS[group]
                files["msm_%s_%s.cu" % (stem, group)] = _file(
                    "the %s %s MSM's driver (msm.cuh)." % (curve["name"], group.upper()),
                    ["kernels/cuda/msm.cuh", "kernels/field.h"],
                    [
                        "ZKFARM_INSTANTIATE_GPU_MSM_SHIFTED(%s, %d)" % (curve["fq"], degree),
                        "ZKFARM_INSTANTIATE_GPU_MSM(%s, %d, %s)" % (curve["fq"], degree, curve["fr_params"]),
                    ],
                )
                for part in MSM_PARTS[group]:
                    files["msm_%s_%s_%s.cu" % (stem, group, part)] = _file(
                        "the %s %s MSM's %s kernel (msm_launch.cuh), a part of its own." %
                        (curve["name"], group.upper(), part),
                        ["kernels/cuda/msm_launch.cuh", "kernels/field.h"],
                        ["ZKFARM_INSTANTIATE_GPU_MSM_PART(%s, %d, %s)" % (curve["fq"], degree, part)],
                    )
        elif kind == "fixed_base":
            files["fixed_base_%s.cu" % stem] = _file(
                "the %s fixed-base multiplication's drivers, G1 and G2 (fixed_base.cuh)." % curve["name"],
                ["kernels/cuda/fixed_base.cuh", "kernels/field.h"],
                [
                    "ZKFARM_INSTANTIATE_GPU_FIXED_BASE(%s, %d, %s)" % (curve["fq"], CUDA_GROUPS[group], curve["fr_params"])
                    for group in CUDA_GROUPS
                ],
            )
            for group in CUDA_GROUPS:
                for part in FIXED_BASE_PARTS:
                    files["fixed_base_%s_%s_%s.cu" % (stem, group, part)] = _file(
                        "the %s %s fixed-base %s kernel (fixed_base_launch.cuh), a part of its own." %
                        (curve["name"], group.upper(), part),
                        ["kernels/cuda/fixed_base_launch.cuh", "kernels/field.h"],
                        [
                            "ZKFARM_INSTANTIATE_GPU_FIXED_BASE_PART(%s, %d, %s, %s)" %
                            (curve["fq"], CUDA_GROUPS[group], curve["fr_params"], part),
                        ],
                    )
        elif kind == "ntt":
            files["ntt_%s.cu" % stem] = _file(
                "GpuNtt over the %s scalar field (ntt.cuh)." % curve["name"],
                ["kernels/cuda/ntt.cuh"],
                ["template class zkfarm::cuda::GpuNtt<%s>;" % curve["fr"]],
            )
        elif kind == "groth16_kernels":
            files["groth16_kernels_%s.cu" % stem] = _file(
                "the PCE products and h kernels over the %s scalar field (groth16_kernels.cuh)." % curve["name"],
                ["kernels/cuda/groth16_kernels.cuh"],
                ["ZKFARM_INSTANTIATE_GROTH16_KERNELS(%s)" % curve["fr"]],
            )
        else:
            fail("unknown CUDA instantiation kind " + kind)
    return files

def cuda_instantiations(name, kind):
    """A genrule `name` writing the .cu files of `kind` (use it as srcs)."""
    files = cuda_instantiation_files(kind)
    cmd = ""
    for file in sorted(files):
        cmd += "cat > $(@D)/%s <<'ZKFARM_EOF'\n%sZKFARM_EOF\n" % (file, files[file])
    native.genrule(
        name = name,
        outs = sorted(files),
        cmd = cmd,
    )

"""cuda_library -- compiles .cu files with nvcc into a library cc_* rules can use.

    load("//tools:cuda.bzl", "cuda_library")

    cuda_library(
        name = "msm_cuda",
        srcs = ["msm.cu"],          # .cu files, one nvcc action each
        hdrs = ["msm_cuda.h"],      # host-callable API, plain C++
        textual_hdrs = ["msm.cuh"], # device headers only .cu files include
        deps = ["//kernels:field"], # cc_library deps: headers for nvcc, linked in
    )

With a toolkit (@local_cuda//:defs.bzl HAS_CUDA, see cuda_configure.bzl) each
.cu becomes one object built by $ZKFARM_CUDA_PATH/bin/nvcc with
ZKFARM_NVCC_COPTS (sm_90 + compute_90 PTX, -std=c++20, -O3, -fPIC), the
objects are archived into lib<name>.a, and <name> provides CcInfo like a
cc_library: it links the archive, its deps and the static CUDA runtime, and
exports the define ZKFARM_HAS_CUDA=1 to everything that depends on it.

Without a toolkit <name> is a cc_library with only hdrs/deps: nothing is
compiled, nothing is linked, ZKFARM_HAS_CUDA is not defined. Code calling into
a cuda_library therefore guards the calls with `#ifdef ZKFARM_HAS_CUDA` (or
supplies a CPU fallback) so CPU-only builds still link.

Device code is compiled whole-program per .cu file (no -rdc): a kernel and
every __device__ function it calls must be visible in the same translation
unit, which is how header-only field/curve templates are used anyway.
"""

load("@local_cuda//:defs.bzl", "HAS_CUDA", "NVCC")
load("//tools:copts.bzl", "ZKFARM_NVCC_COPTS")

def _object_name(src):
    # foo/bar.cu -> bar.o; the per-target _objs/ directory keeps names unique.
    return src.basename[:-len(src.extension) - 1] + ".o"

def _cuda_archive_impl(ctx):
    cc_toolchain = ctx.attr._cc_toolchain[cc_common.CcToolchainInfo]
    feature_configuration = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = cc_toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features,
    )
    dep_compilation = [dep[CcInfo].compilation_context for dep in ctx.attr.deps]

    # Every header an nvcc action may read: ours and all transitive deps'.
    headers = depset(
        ctx.files.hdrs + ctx.files.textual_hdrs,
        transitive = [context.headers for context in dep_compilation],
    )

    include_args = ctx.actions.args()
    include_args.add_all(["-I.", "-I" + ctx.genfiles_dir.path, "-I" + ctx.bin_dir.path])
    for context in dep_compilation:
        include_args.add_all(context.includes, before_each = "-I")
        include_args.add_all(context.quote_includes, before_each = "-I")
        include_args.add_all(context.system_includes, before_each = "-isystem")
        include_args.add_all(context.defines, format_each = "-D%s")

    objects = []
    for src in ctx.files.srcs:
        obj = ctx.actions.declare_file("_objs/%s/%s" % (ctx.label.name, _object_name(src)))
        args = ctx.actions.args()
        args.add("-ccbin", cc_toolchain.compiler_executable)
        args.add_all(ZKFARM_NVCC_COPTS)
        args.add_all(ctx.attr.copts)
        args.add_all(["-c", src.path, "-o", obj.path])
        ctx.actions.run(
            executable = NVCC,
            arguments = [args, include_args],
            inputs = depset([src], transitive = [headers]),
            outputs = [obj],
            mnemonic = "NvccCompile",
            progress_message = "nvcc %s" % src.short_path,
            # nvcc needs PATH for the host compiler's helpers and a TMPDIR.
            use_default_shell_env = True,
        )
        objects.append(obj)

    archive = ctx.actions.declare_file("lib%s.a" % ctx.label.name)
    ctx.actions.run(
        executable = cc_toolchain.ar_executable,
        arguments = ["rcsD", archive.path] + [obj.path for obj in objects],
        inputs = objects,
        outputs = [archive],
        mnemonic = "NvccArchive",
        progress_message = "ar %s" % archive.short_path,
    )

    # Objects are -fPIC, so the one archive serves PIC and non-PIC links.
    library = cc_common.create_library_to_link(
        actions = ctx.actions,
        feature_configuration = feature_configuration,
        cc_toolchain = cc_toolchain,
        static_library = archive,
        pic_static_library = archive,
        alwayslink = ctx.attr.alwayslink,
    )
    linking_context = cc_common.create_linking_context(
        linker_inputs = depset([cc_common.create_linker_input(
            owner = ctx.label,
            libraries = depset([library]),
        )]),
    )
    own_info = CcInfo(
        compilation_context = cc_common.create_compilation_context(headers = depset(ctx.files.hdrs)),
        linking_context = linking_context,
    )
    return [
        DefaultInfo(files = depset([archive])),
        cc_common.merge_cc_infos(
            direct_cc_infos = [own_info],
            cc_infos = [dep[CcInfo] for dep in ctx.attr.deps],
        ),
    ]

_cuda_archive = rule(
    implementation = _cuda_archive_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"], mandatory = True),
        "hdrs": attr.label_list(allow_files = [".h", ".hpp", ".cuh"]),
        "textual_hdrs": attr.label_list(allow_files = [".h", ".hpp", ".cuh", ".inc"]),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
        "alwayslink": attr.bool(default = False),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    fragments = ["cpp"],
    doc = "Compiles .cu files with nvcc into a static archive with CcInfo.",
)

def cuda_library(
        name,
        srcs,
        hdrs = [],
        textual_hdrs = [],
        deps = [],
        copts = [],
        alwayslink = False,
        visibility = None,
        testonly = False,
        tags = []):
    """A library whose .cu sources are compiled by nvcc; a header-only stub without CUDA.

    Args:
      name: the target other cc_* targets depend on (builds lib<name>.a).
      srcs: .cu files.
      hdrs: headers exported to dependents (host-callable API, plain C++).
      textual_hdrs: headers only the .cu files include (.cuh).
      deps: cc_library targets the .cu files include or the library calls.
      copts: extra nvcc flags, after ZKFARM_NVCC_COPTS.
      alwayslink: keep every object even if nothing references it.
      visibility, testonly, tags: as for cc_library; with CUDA the target
        also gets the tag "cuda".
    """
    if not HAS_CUDA:
        native.cc_library(
            name = name,
            hdrs = hdrs,
            deps = deps,
            visibility = visibility,
            testonly = testonly,
            tags = tags,
        )
        return

    _cuda_archive(
        name = name,
        srcs = srcs,
        hdrs = hdrs,
        textual_hdrs = textual_hdrs,
        # cuda_runtime carries cudart_static and the ZKFARM_HAS_CUDA=1 define.
        deps = deps + ["@local_cuda//:cuda_runtime"],
        copts = copts,
        alwayslink = alwayslink,
        visibility = visibility,
        testonly = testonly,
        # "cuda" lets CPU-only runs skip nvcc work: --build_tag_filters=-cuda
        # (a tagged target is still built when something built depends on it).
        tags = tags + ["cuda"],
    )

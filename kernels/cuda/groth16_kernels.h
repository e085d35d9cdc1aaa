// groth16_kernels.h -- the device steps of a Groth16 proof that are neither
// an NTT nor an MSM: the sparse products A.w, B.w (and C.w for the
// constraint check) over a device-resident PCE, and h = a*b - c.
//
// Host-callable launchers, templated on the host scalar field (Bn254Fr or
// Bls12381Fr) and instantiated in groth16_kernels_bn254.cu /
// groth16_kernels_bls12_381.cu, which include no curve header (the kernels
// only need Fr). Values are Fr in the host's Montgomery layout. Everything
// is queued on `stream` (asynchronous); launch failures throw CudaError.
// groth16_device.h sequences them into a proof.
#ifndef ZKFARM_KERNELS_CUDA_GROTH16_KERNELS_H_
#define ZKFARM_KERNELS_CUDA_GROTH16_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace zkfarm::cuda {

// A CSR matrix in device memory, laid out as kernels/pce.h's Csr: row r's
// entries are cols[row_offsets[r] .. row_offsets[r+1]); the last
// general_offsets[r+1] - general_offsets[r] of them carry the coefficients
// values[general_offsets[r] ..], the others have coefficient 1.
template <class Fr>
struct DeviceCsrView {
  const std::uint64_t* row_offsets = nullptr;      // rows + 1
  const std::uint64_t* general_offsets = nullptr;  // rows + 1
  const std::uint32_t* cols = nullptr;             // nnz
  const Fr* values = nullptr;                      // general coefficients
};

// For every row r < n: out_a[r] = (A.w)[r], out_b[r] = (B.w)[r] and
// out_ab[r] = out_a[r] * out_b[r], with rows >= `rows` zero (the domain is
// padded to n). Coefficient-1 entries are added without a multiplication.
// When c is non-null, also computes (C.w)[r] and lowers *first_unsatisfied
// (atomicMin; the caller initializes it to 0xffffffff) to the smallest row
// with (A.w)(B.w) != C.w. One thread per row. out_ab may be null (the
// product is then left to launch_hadamard, once the witness is freed).
template <class Fr>
void launch_pce_products(const DeviceCsrView<Fr>& a, const DeviceCsrView<Fr>& b, const DeviceCsrView<Fr>* c,
                         std::uint32_t rows, std::uint32_t n, const Fr* witness, Fr* out_a, Fr* out_b, Fr* out_ab,
                         std::uint32_t* first_unsatisfied, cudaStream_t stream);

// The same products over row ranges whose offsets travel packed (the
// streamed SpMV of a PCE in host memory: 4 bytes a row instead of 16). A
// range's rows are cut in blocks of kPackedRowBlock; for row r of the range,
// counts[r] = its non-zeros | its general (non-unit) coefficients << 16,
// and block_starts[2k], block_starts[2k + 1] are the absolute cols and
// values offsets of block k's first row (cols and values are addressed by
// absolute offsets, like DeviceCsrView's). With value_index, general
// coefficient g is value_table[value_index[g]] (a PCE with few distinct
// coefficients: 2 bytes each instead of a field element) and values is
// unused.
constexpr std::uint32_t kPackedRowBlock = 256;
template <class Fr>
struct PackedCsrView {
  const std::uint32_t* counts = nullptr;        // rows
  const std::uint64_t* block_starts = nullptr;  // 2 per block of kPackedRowBlock rows
  const std::uint32_t* cols = nullptr;
  const Fr* values = nullptr;
  const std::uint16_t* value_index = nullptr;
  const Fr* value_table = nullptr;
};
// Rows [0, rows) of the range: out_a[r], out_b[r] (out_ab[r]) and the
// check, as launch_pce_products with n = rows.
template <class Fr>
void launch_pce_products_packed(const PackedCsrView<Fr>& a, const PackedCsrView<Fr>& b, const PackedCsrView<Fr>* c,
                                std::uint32_t rows, const Fr* witness, Fr* out_a, Fr* out_b, Fr* out_ab,
                                std::uint32_t* first_unsatisfied, cudaStream_t stream);

// out[i] = a[i] * b[i] for i < n.
template <class Fr>
void launch_hadamard(const Fr* a, const Fr* b, Fr* out, std::uint32_t n, cudaStream_t stream);

// The bases and scalars of the non-zero witness entries of one streamed
// range, gathered into device buffers for an MSM: for j < count,
// out_scalars[j] = witness[index[j]] and out_bases[j] = bases[index[j] -
// index_offset], bases being `base_bytes` bytes each (a multiple of 16).
// bases and index may be page-locked host memory mapped for the device (the
// kernel then reads only the needed points over PCIe, the zeros' never);
// witness is device memory. Grid-stride, a few blocks per SM, so that it
// leaves room to the MSM kernels running beside it.
template <class Fr>
void launch_gather_nonzero(const std::uint32_t* index, std::uint64_t count, std::uint64_t index_offset,
                           const void* bases, std::size_t base_bytes, const Fr* witness, void* out_bases,
                           Fr* out_scalars, cudaStream_t stream);

// The non-zero scalars of in[0, n), in order, to out (room for n): the
// device side of MsmPipeline's host compaction, whose bases the CPU
// gathered with the same test (msm_stream.h). Stream-ordered; n < 2^31.
template <class Fr>
void launch_compact_nonzero(const Fr* in, std::uint64_t n, Fr* out, cudaStream_t stream);

// a[i] = a[i] * b[i] - c[i] for i < n (h on the odd coset, in a's storage).
template <class Fr>
void launch_h_from_coset(Fr* a, const Fr* b, const Fr* c, std::uint32_t n, cudaStream_t stream);

}  // namespace zkfarm::cuda

#endif  // ZKFARM_KERNELS_CUDA_GROTH16_KERNELS_H_

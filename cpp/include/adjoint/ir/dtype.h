// Element types of tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace aj {

enum class DType { kFloat32, kFloat64, kInt32, kInt64, kBool };

const char* dtype_name(DType t);                        // "float32"
std::optional<DType> dtype_from_name(const std::string& name);
size_t dtype_size(DType t);                             // bytes per element
// Bytes of a row-major tensor of these dims, or nullopt when a dim is
// negative or the byte size of its dims other than 0 does not fit in int64
// (NumPy's limit, which holds beside a 0 dim too).
std::optional<int64_t> tensor_bytes(const std::vector<int64_t>& dims, DType t);
inline bool is_float(DType t) { return t == DType::kFloat32 || t == DType::kFloat64; }
inline bool is_int(DType t) { return t == DType::kInt32 || t == DType::kInt64; }

}  // namespace aj

// heterod's IR as bytes: what a driver's blob holds so that importing it
// skips ONNX parsing, checking, shape inference and the driver's graph passes
// (the CPU driver stores its optimized graph this way). Deterministic: the
// same model gives the same bytes. Decoding copies the bytes into one
// aligned block that the model's constant tensors view, and checks every
// count, length, reference and tensor size against the input first; a
// failure is BLOB_CORRUPT naming the field. It checks structure, not meaning:
// the bytes are trusted as far as the blob's checksums vouch for them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/byte_io.h"
#include "core/driver.h"
#include "core/graph.h"

namespace hetero::core {

std::vector<uint8_t> encode_model(const Model& model);

// `what` names the input in messages ("CPU blob"); it becomes Model::source.
// Decodes in place: constants view `bytes`, which `owner` keeps alive and
// which must start 64-byte aligned (fails with INTERNAL otherwise).
std::unique_ptr<Model> decode_model(std::span<const uint8_t> bytes, std::shared_ptr<const void> owner,
                                    const std::string& what);
// Decodes from a copy of `bytes` (one aligned block).
std::unique_ptr<Model> decode_model(std::span<const uint8_t> bytes, const std::string& what);

// One tensor in the codec's form (dtype, shape, byte count, then the data
// 64-byte aligned from the start of the encoding), for formats built on it.
void encode_tensor(ByteWriter& w, const Tensor& tensor);
// Reads one, checking its shape and byte count (BLOB_CORRUPT naming
// `field`). The result views the reader's bytes and keeps `owner` alive; with
// a null owner the caller must copy it before those bytes go.
Tensor decode_tensor(ByteReader& r, const std::string& field, std::shared_ptr<const void> owner);

// A compiled model's ports (name, dtype, rank, dims with their names), for
// the blob sections that list them (HETERO plans, GPU network plans).
void encode_ports(ByteWriter& w, const std::vector<driver::Port>& ports);
// Reads them, refusing unknown dtypes and ranks over 64 (BLOB_CORRUPT naming
// `field`).
std::vector<driver::Port> decode_ports(ByteReader& r, const std::string& field);

}  // namespace hetero::core

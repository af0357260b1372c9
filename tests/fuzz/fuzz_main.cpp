// A stand-alone driver for the fuzz targets, for builds without libFuzzer
// (GCC, the ASan test run): it feeds each seed file to the target as it is,
// then `--mutations N` deterministic mutants of it (bit flips, byte
// overwrites, truncations, duplicated and deleted ranges), so that the test
// suite exercises the parser on broken input on every run. Built with clang
// and -fsanitize=fuzzer, the target's own LLVMFuzzerTestOneInput is driven by
// libFuzzer instead and this file is not used.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz: cannot read %s\n", path);
    std::exit(2);
  }
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One random edit of `bytes`; the mix favours small local damage, which gets
// past the outer message and into the nested fields.
void mutate(std::vector<uint8_t>& bytes, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  switch (rng() % 6) {
    case 0:
      if (!bytes.empty()) bytes[pick(bytes.size())] ^= static_cast<uint8_t>(1u << (rng() % 8));
      break;
    case 1:
      if (!bytes.empty()) bytes[pick(bytes.size())] = static_cast<uint8_t>(rng());
      break;
    case 2:  // a varint-looking run: huge lengths and counts
      if (!bytes.empty()) {
        const size_t at = pick(bytes.size());
        for (size_t i = at; i < bytes.size() && i < at + 5; ++i) bytes[i] = 0xff;
      }
      break;
    case 3:
      bytes.resize(pick(bytes.size() + 1));
      break;
    case 4: {
      const size_t at = pick(bytes.size()), len = pick(std::min<size_t>(bytes.size() - at, 64) + 1);
      bytes.insert(bytes.begin() + static_cast<ptrdiff_t>(at), bytes.begin() + static_cast<ptrdiff_t>(at),
                   bytes.begin() + static_cast<ptrdiff_t>(at + len));
      break;
    }
    default: {
      const size_t at = pick(bytes.size()), len = pick(std::min<size_t>(bytes.size() - at, 64) + 1);
      bytes.erase(bytes.begin() + static_cast<ptrdiff_t>(at), bytes.begin() + static_cast<ptrdiff_t>(at + len));
      break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  long mutations = 0;
  std::vector<const char*> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mutations" && i + 1 < argc) {
      mutations = std::strtol(argv[++i], nullptr, 10);
    } else {
      seeds.push_back(argv[i]);
    }
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "usage: %s [--mutations N] SEED_FILE...\n", argv[0]);
    return 2;
  }
  size_t runs = 0;
  for (const char* path : seeds) {
    const std::vector<uint8_t> seed = read_file(path);
    LLVMFuzzerTestOneInput(seed.data(), seed.size());
    ++runs;
    // Seeded by the file name: a failure reproduces with the same arguments.
    std::mt19937_64 rng(std::hash<std::string>{}(path));
    for (long m = 0; m < mutations; ++m) {
      std::vector<uint8_t> bytes = seed;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) mutate(bytes, rng);
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
      ++runs;
    }
  }
  std::printf("%zu inputs, no crash\n", runs);
  return 0;
}

// Counts a PNG's pixels of given colours: the check that a page rendered by
// headless Chromium (tests/render/render.cmake) drew its charts.
//   png_colours FILE.png '#4c78a8:400' '#f58518:400' ...
// Prints each colour's count; status 0 when every colour has at least its
// minimum, 1 when one has fewer, 2 for a file it cannot read. Reads 8-bit
// RGB and RGBA, not interlaced (what Chromium's screenshots are).
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

uint32_t be32(const unsigned char* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

int fail(const std::string& why) {
  std::fprintf(stderr, "png_colours: %s\n", why.c_str());
  return 2;
}

int paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: png_colours FILE.png '#rrggbb:MIN' ...\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto* bytes = reinterpret_cast<const unsigned char*>(file.data());
  static const unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (file.size() < 8 || !std::equal(kSignature, kSignature + 8, bytes)) return fail("not a PNG file");
  uint32_t width = 0, height = 0;
  int channels = 0;
  std::string idat;
  for (size_t at = 8; at + 12 <= file.size();) {
    const uint32_t length = be32(bytes + at);
    if (length > file.size() - at - 12) return fail("a chunk runs past the end");
    const std::string type(file, at + 4, 4);
    const unsigned char* data = bytes + at + 8;
    if (type == "IHDR") {
      if (length < 13) return fail("a short IHDR");
      width = be32(data);
      height = be32(data + 4);
      if (data[8] != 8 || (data[9] != 2 && data[9] != 6) || data[12] != 0)
        return fail("not 8-bit RGB or RGBA without interlacing");
      channels = data[9] == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      idat.append(reinterpret_cast<const char*>(data), length);
    } else if (type == "IEND") {
      break;
    }
    at += 12 + length;
  }
  if (channels == 0 || width == 0 || height == 0 || width > 20000 || height > 20000) return fail("no usable IHDR");
  const size_t stride = size_t(width) * size_t(channels);
  std::vector<unsigned char> raw((stride + 1) * height);
  uLongf raw_size = uLongf(raw.size());
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()), uLong(idat.size())) != Z_OK ||
      raw_size != raw.size())
    return fail("the image data does not inflate to its size");
  std::vector<unsigned char> pixels(stride * height);
  for (size_t y = 0; y < height; ++y) {
    const unsigned char filter = raw[y * (stride + 1)];
    const unsigned char* src = &raw[y * (stride + 1) + 1];
    unsigned char* row = &pixels[y * stride];
    const unsigned char* up = y ? &pixels[(y - 1) * stride] : nullptr;
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= size_t(channels) ? row[x - size_t(channels)] : 0, b = up ? up[x] : 0;
      const int c = up && x >= size_t(channels) ? up[x - size_t(channels)] : 0;
      int predicted = 0;
      switch (filter) {
        case 0: predicted = 0; break;
        case 1: predicted = a; break;
        case 2: predicted = b; break;
        case 3: predicted = (a + b) / 2; break;
        case 4: predicted = paeth(a, b, c); break;
        default: return fail("an unknown row filter");
      }
      row[x] = static_cast<unsigned char>(src[x] + predicted);
    }
  }
  int status = 0;
  for (int k = 2; k < argc; ++k) {
    unsigned r = 0, g = 0, b = 0;
    long minimum = 0;
    if (std::sscanf(argv[k], "#%2x%2x%2x:%ld", &r, &g, &b, &minimum) != 4) return fail(std::string("bad colour ") + argv[k]);
    long count = 0;
    for (size_t p = 0; p < size_t(width) * height; ++p) {
      const unsigned char* px = &pixels[p * size_t(channels)];
      if (std::abs(int(px[0]) - int(r)) <= 2 && std::abs(int(px[1]) - int(g)) <= 2 && std::abs(int(px[2]) - int(b)) <= 2)
        ++count;
    }
    std::printf("#%02x%02x%02x: %ld pixels (at least %ld)\n", r, g, b, count, minimum);
    if (count < minimum) status = 1;
  }
  return status;
}

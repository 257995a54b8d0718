// What the tests of the SVG pictures share: attributes and tags found in the SVG text, a PNG as
// rsvg-convert writes it decoded, and the heatmap's cells checked in the rendered picture.
#ifndef IOTRACE_TESTS_UNIT_SVG_TEST_UTIL_H_
#define IOTRACE_TESTS_UNIT_SVG_TEST_UTIL_H_

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace iotrace::test {

// The value of attribute `name` in the tag that starts at `tag`, "" when absent.
inline std::string Attr(const std::string& svg, size_t tag, const std::string& name) {
  const size_t end = svg.find('>', tag);
  const size_t at = svg.find(" " + name + "=\"", tag);
  if (at == std::string::npos || at > end) return "";
  const size_t from = at + name.size() + 3;
  return svg.substr(from, svg.find('"', from) - from);
}

// Every tag of `svg` that starts with `start` ("<g class=\"panel\""), by position.
inline std::vector<size_t> Tags(const std::string& svg, const std::string& start, size_t from = 0,
                         size_t to = std::string::npos) {
  std::vector<size_t> at;
  for (size_t p = svg.find(start, from); p != std::string::npos && p < to;
       p = svg.find(start, p + 1)) {
    at.push_back(p);
  }
  return at;
}

// A PNG as rsvg-convert writes it: 8 bits per channel, RGB or RGBA, not interlaced.
struct Png {
  uint32_t width = 0, height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;  // rows of width * channels bytes
  const uint8_t* At(uint32_t x, uint32_t y) const {
    return &pixels[(static_cast<size_t>(y) * width + x) * channels];
  }
};

inline uint32_t Be32(const std::string& s, size_t at) {
  return static_cast<uint32_t>(static_cast<uint8_t>(s[at])) << 24 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 1])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 2])) << 8 |
         static_cast<uint8_t>(s[at + 3]);
}

inline bool ReadPng(const std::string& file, Png* png, std::string* why) {
  if (file.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return *why = "not a PNG", false;
  std::string idat;
  for (size_t at = 8; at + 12 <= file.size();) {
    const uint32_t n = Be32(file, at);
    const std::string type = file.substr(at + 4, 4);
    if (type == "IHDR") {
      png->width = Be32(file, at + 8);
      png->height = Be32(file, at + 12);
      const int depth = file[at + 16], colour = file[at + 17], interlace = file[at + 20];
      if (depth != 8 || (colour != 2 && colour != 6) || interlace != 0) {
        return *why = "unexpected PNG layout", false;
      }
      png->channels = colour == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      idat += file.substr(at + 8, n);
    }
    at += 12 + n;
  }
  const size_t stride = static_cast<size_t>(png->width) * png->channels;
  std::vector<uint8_t> raw((stride + 1) * png->height);
  uLongf size = raw.size();
  if (uncompress(raw.data(), &size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) !=
          Z_OK ||
      size != raw.size()) {
    return *why = "bad image data", false;
  }
  png->pixels.assign(stride * png->height, 0);
  const int bpp = png->channels;
  for (size_t y = 0; y < png->height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    uint8_t* out = &png->pixels[y * stride];
    const uint8_t* up = y == 0 ? nullptr : out - stride;
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= static_cast<size_t>(bpp) ? out[x - bpp] : 0;
      const int b = up ? up[x] : 0;
      const int c = up && x >= static_cast<size_t>(bpp) ? up[x - bpp] : 0;
      int pred = 0;
      switch (filter) {
        case 0: pred = 0; break;
        case 1: pred = a; break;
        case 2: pred = b; break;
        case 3: pred = (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default: return *why = "unknown PNG filter", false;
      }
      out[x] = static_cast<uint8_t>(in[x] + pred);
    }
  }
  return true;
}

inline bool IsWhite(const uint8_t* p) { return p[0] > 250 && p[1] > 250 && p[2] > 250; }

// Pixels that are not white: a picture with a fiftieth of them or fewer is (nearly) blank.
inline size_t InkedPixels(const Png& png) {
  size_t inked = 0;
  for (uint32_t y = 0; y < png.height; ++y) {
    for (uint32_t x = 0; x < png.width; ++x) inked += !IsWhite(png.At(x, y));
  }
  return inked;
}

// The requests in the cells of the heatmap group that starts at `at` (`<g class="heatmap">`).
inline uint64_t HeatmapCount(const std::string& svg, size_t at) {
  uint64_t n = 0;
  for (size_t rect : Tags(svg, "<rect ", at, svg.find("</g>", at))) {
    n += std::stoull(Attr(svg, rect, "data-n"));
  }
  return n;
}

// Of the cells at least 3 px square in the heatmap group at `at`, how many show their colour at
// their centre in `png` (the lines drawn over the cells may cover some).
struct CellsSeen {
  size_t cells = 0, matching = 0;
};
inline CellsSeen CellsInTheirColour(const std::string& svg, size_t at, const Png& png) {
  CellsSeen seen;
  for (size_t rect : Tags(svg, "<rect ", at, svg.find("</g>", at))) {
    const double x = std::stod(Attr(svg, rect, "x")), y = std::stod(Attr(svg, rect, "y"));
    const double w = std::stod(Attr(svg, rect, "width")), h = std::stod(Attr(svg, rect, "height"));
    if (w < 3 || h < 3) continue;
    const uint32_t fill = std::stoul(Attr(svg, rect, "fill").substr(1), nullptr, 16);
    const uint8_t* p = png.At(static_cast<uint32_t>(x + w / 2), static_cast<uint32_t>(y + h / 2));
    ++seen.cells;
    seen.matching += std::abs(p[0] - static_cast<int>(fill >> 16)) < 8 &&
                     std::abs(p[1] - static_cast<int>((fill >> 8) & 0xff)) < 8 &&
                     std::abs(p[2] - static_cast<int>(fill & 0xff)) < 8;
  }
  return seen;
}

}  // namespace iotrace::test

#endif  // IOTRACE_TESTS_UNIT_SVG_TEST_UTIL_H_

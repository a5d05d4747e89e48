// `stoker preprocess`: the image processor on files, one JSON line per file; optional .npy dumps
// of the resized uint8 image and of pixel_values for parity checks against Pillow/numpy.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "stoker/base/file.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"
#include "stoker/image/processor.h"
#include "stoker/model/model_config.h"
#include "stoker/base/json_text.h"

namespace stoker::cli {
namespace {

constexpr char kHelp[] = R"(usage: stoker preprocess --model M [--dtype f32|bf16] [--dump-dir D]
                         [--exif apply|ignore] [--small-images resize|refuse] FILE...

Runs the model's image processor (decode -> RGB -> EXIF orientation -> smart_resize -> exact
bicubic -> rescale -> normalise -> patchify, HF slow-processor semantics) on each FILE and prints
one JSON line each (width/height: after the EXIF orientation; orientation: the one applied):
  {"file":..,"ok":true,"format":..,"mode":..,"orientation":..,"width":..,"height":..,"resized_width":..,
   "resized_height":..,"grid":[t,h,w],"tokens":..,"rows":..,"cols":..}
  {"file":..,"ok":false,"code":"DataLoss","error":".."}
Exit status 1 if any file failed (the others are still processed), 2 on a usage error.

options:
  --model M       qwen2-vl | qwen2.5-vl | qwen3-vl | a Hugging Face model folder (required)
  --dtype T       pixel_values type: f32 (default) or bf16 (round to nearest even)
  --dump-dir D    write D/<i>.resized.npy (uint8, H x W x 3) and D/<i>.pixel_values.npy
                  (float32, or bf16 bits as uint16; rows x cols), i = the file's 0-based index
  --exif E        apply (default: EXIF orientation as transformers' load_image, Pillow 9.4's
                  exif_transpose) | ignore (pixels as stored: qwen-vl-utils, LLaMA-Factory)
  --small-images S  resize (default: transformers >= 4.53 enlarges them) | refuse (a side below
                  patch x merge is an error, as in transformers <= 4.52)
)";

// NumPy .npy v1.0: magic, version, little-endian u16 header length, a Python dict literal
// padded with spaces and ending in '\n' so that the data starts on a 64-byte boundary.
std::vector<std::uint8_t> npy_bytes(const char* descr, std::initializer_list<std::int64_t> shape,
                                    const void* data, std::size_t data_bytes) {
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  std::size_t i = 0;
  for (std::int64_t d : shape) dict += (i++ ? ", " : "") + std::to_string(d);
  dict += shape.size() == 1 ? ",), }" : "), }";
  std::size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string head("\x93NUMPY\x01\x00", 8);
  head += static_cast<char>(dict.size() & 0xff);
  head += static_cast<char>(dict.size() >> 8);
  head += dict;
  std::vector<std::uint8_t> out(head.begin(), head.end());
  const auto* p = static_cast<const std::uint8_t*>(data);
  out.insert(out.end(), p, p + data_bytes);
  return out;
}

struct Options {
  image::PixelDType dtype = image::PixelDType::kFloat32;
  std::string dump_dir;
};

// Processes one file; on success prints its JSON line and writes the dumps.
Status process_file(const image::ImageProcessor& proc, const Options& opt, const std::string& file,
                    int index, image::ImageScratch* scratch, std::string* line) {
  STOKER_ASSIGN_OR_RETURN(auto bytes, read_file(file));
  STOKER_ASSIGN_OR_RETURN(auto header, image::probe_image(bytes));
  STOKER_ASSIGN_OR_RETURN(auto plan, proc.plan(header));
  const std::int64_t cols = proc.columns();
  const std::size_t elem = opt.dtype == image::PixelDType::kFloat32 ? 4 : 2;
  std::vector<std::uint8_t> pixel_values(static_cast<std::size_t>(plan.rows() * cols) * elem);
  // pixel_values come from the production path (streaming: decode → resize → patchify by bands).
  STOKER_RETURN_IF_ERROR(proc.process(bytes, plan, opt.dtype, pixel_values.data(), scratch));
  if (!opt.dump_dir.empty()) {
    // The resized image for the dump comes from the whole-image path; its pixel_values must be
    // the same bytes, or the streaming path is wrong — checked on every dumped file.
    image::RgbImage resized;
    std::vector<std::uint8_t> whole(pixel_values.size());
    STOKER_RETURN_IF_ERROR(proc.process(bytes, plan, opt.dtype, whole.data(), scratch, &resized));
    if (whole != pixel_values) {
      return internal_error("streaming and whole-image paths differ on " + file);
    }
    const std::string base = opt.dump_dir + "/" + std::to_string(index);
    STOKER_RETURN_IF_ERROR(write_file(base + ".resized.npy",
                                      npy_bytes("|u1", {resized.height, resized.width, 3},
                                                resized.pixels.data(), resized.pixels.size())));
    STOKER_RETURN_IF_ERROR(write_file(base + ".pixel_values.npy",
                                      npy_bytes(elem == 4 ? "<f4" : "<u2", {plan.rows(), cols},
                                                pixel_values.data(), pixel_values.size())));
  }
  const int merge = proc.config().merge_size;
  *line += ",\"ok\":true,\"format\":" + json_string(image::format_name(header.format)) +
           ",\"mode\":" + json_string(header.mode) + ",\"orientation\":" + std::to_string(plan.orientation) +
           ",\"width\":" + std::to_string(plan.src_width) +
           ",\"height\":" + std::to_string(plan.src_height) + ",\"resized_width\":" + std::to_string(plan.width) +
           ",\"resized_height\":" + std::to_string(plan.height) + ",\"grid\":[" + std::to_string(plan.grid_t) +
           "," + std::to_string(plan.grid_h) + "," + std::to_string(plan.grid_w) + "],\"tokens\":" +
           std::to_string(plan.tokens(merge)) + ",\"rows\":" + std::to_string(plan.rows()) +
           ",\"cols\":" + std::to_string(cols) + "}";
  return ok_status();
}

}  // namespace

int run_preprocess(int argc, char** argv) {
  auto args = Args::parse(argc, argv, {"model", "dtype", "dump-dir", "exif", "small-images"}, {"help"});
  if (!args.ok()) return report("preprocess", args.error());
  if (args->has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (!args->has("model")) return report("preprocess", invalid_argument("--model is required (see --help)"));
  if (args->positional().empty()) return report("preprocess", invalid_argument("no files given (see --help)"));
  Options opt;
  const std::string dtype = args->get("dtype", "f32");
  if (dtype == "bf16") opt.dtype = image::PixelDType::kBFloat16;
  else if (dtype != "f32") return report("preprocess", invalid_argument("--dtype: f32 or bf16, not '" + dtype + "'"));
  opt.dump_dir = args->get("dump-dir");
  if (!opt.dump_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opt.dump_dir, ec);
    if (ec) return report("preprocess", permission_denied("creating " + opt.dump_dir + ": " + ec.message()));
  }
  auto model = model::load_model(args->get("model"));
  if (!model.ok()) return report("preprocess", model.error());
  if (Status st = image::set_exif_option(args->get("exif", "apply"), &model->image); !st.ok())
    return report("preprocess", st.error());
  if (Status st = image::set_small_images_option(args->get("small-images", "resize"), &model->image); !st.ok())
    return report("preprocess", st.error());
  auto proc = image::ImageProcessor::create(model->image);
  if (!proc.ok()) return report("preprocess", proc.error());

  image::ImageScratch scratch;
  int failures = 0;
  const auto& files = args->positional();
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::string line = "{\"file\":" + json_string(files[i]);
    Status st = process_file(*proc, opt, files[i], static_cast<int>(i), &scratch, &line);
    if (!st.ok()) {
      ++failures;
      Error err = std::move(st).error();
      std::string what = err.to_string();
      if (what.find(files[i]) == std::string::npos) what = files[i] + ": " + what;
      line += ",\"ok\":false,\"code\":" + json_string(error_code_name(err.code())) +
              ",\"error\":" + json_string(what) + "}";
    }
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  return failures ? 1 : 0;
}

}  // namespace stoker::cli

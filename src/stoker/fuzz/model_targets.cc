// A Hugging Face model folder as load_model reads it: config.json, preprocessor_config.json and
// the chat template files, from one input split at "\n#FILE#\n" (parts beyond the input's are
// absent files). A loaded model's image processor must then plan images of extreme shapes.
#include <filesystem>
#include <string>

#include "stoker/fuzz/scratch.h"
#include "stoker/fuzz/targets.h"
#include "stoker/image/processor.h"
#include "stoker/model/model_config.h"

namespace stoker::fuzz {
namespace {

constexpr const char* kFiles[] = {"config.json", "preprocessor_config.json", "chat_template.json",
                                  "tokenizer_config.json"};

void check_processor(const image::ImageProcessorConfig& config) {
  Result<image::ImageProcessor> p = image::ImageProcessor::create(config);
  if (!p.ok()) return;
  for (auto [w, h] : {std::pair{1, 1}, {28, 28}, {3, 100000}, {100000, 3}, {65535, 65535}}) {
    image::ImageHeader header{.width = w, .height = h, .mode = "RGB"};
    Result<image::ImagePlan> plan = p->plan(header);
    if (!plan.ok()) continue;
    check(plan->width > 0 && plan->height > 0 && plan->grid_h > 0 && plan->grid_w > 0,
          "a plan has a size");
    check(plan->width % config.factor() == 0 && plan->height % config.factor() == 0,
          "a plan is a multiple of patch·merge");
  }
}

void run_model(const std::uint8_t* data, std::size_t size) {
  const std::string dir = scratch_dir() + "/model";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string_view rest = as_text(data, size);
  std::string_view preprocessor;
  bool more = true;
  for (int i = 0; i < 4; ++i) {
    const std::string path = dir + "/" + kFiles[i];
    if (!more) {
      std::filesystem::remove(path, ec);
      continue;
    }
    const std::size_t at = rest.find("\n#FILE#\n");
    const std::string_view part = rest.substr(0, at);
    if (i == 1) preprocessor = part;
    write_file(path, part);
    more = at != std::string_view::npos;
    if (more) rest.remove_prefix(at + 8);
  }
  Result<model::ModelConfig> m = model::load_model(dir);
  if (!m.ok()) {
    check(!m.error().message().empty(), "an error carries a message");
  } else {
    (void)model::chat_template(*m);
    check(!model::describe_chat_template(*m).empty(), "the template is described");
    check_processor(m->image);
  }
  image::ImageProcessorConfig c;
  if (model::parse_preprocessor_config(preprocessor, &c).ok()) check_processor(c);
}

// Folders shaped like the hub's Qwen2-VL / Qwen2.5-VL / Qwen3-VL checkpoints (the fields stoker
// reads, values of spec §1.2 and §6.4), written here.
void model_seeds(const std::string& dir) {
  const std::string sep = "\n#FILE#\n";
  const std::string pre25 = R"({"min_pixels":3136,"max_pixels":12845056,"patch_size":14,"temporal_patch_size":2,"merge_size":2,"image_mean":[0.48145466,0.4578275,0.40821073],"image_std":[0.26862954,0.26130258,0.27577711],"image_processor_type":"Qwen2VLImageProcessor","processor_class":"Qwen2_5_VLProcessor"})";
  const std::string pre3 = R"({"size":{"shortest_edge":65536,"longest_edge":16777216},"patch_size":16,"temporal_patch_size":2,"merge_size":2,"image_mean":[0.5,0.5,0.5],"image_std":[0.5,0.5,0.5],"do_resize":true,"do_rescale":true,"rescale_factor":0.00392156862745098,"do_normalize":true,"do_convert_rgb":true,"resample":3})";
  write_seed(dir, "qwen25", R"({"model_type":"qwen2_5_vl","image_token_id":151655,"video_token_id":151656,"vision_start_token_id":151652,"vision_end_token_id":151653,"vision_config":{"tokens_per_second":2}})" + sep + pre25);
  write_seed(dir, "qwen3", R"({"model_type":"qwen3_vl","text_config":{"image_token_id":151655},"vision_config":{}})" + sep + pre3 + sep + R"({"chat_template":"{% for m in messages %}{{ m.content }}{% endfor %}"})");
  write_seed(dir, "qwen2-tok", R"({"model_type":"qwen2_vl"})" + sep + pre25 + sep + "{}" + sep + R"({"chat_template":[{"name":"default","template":"x"}]})");
  write_seed(dir, "preprocessor-only", "" + sep + pre25);
}

}  // namespace

const Target kModelTarget{"model", "load_model on a folder (config.json, preprocessor_config.json, chat templates) + plans",
                          make_scratch_dir, run_model, model_seeds};

}  // namespace stoker::fuzz

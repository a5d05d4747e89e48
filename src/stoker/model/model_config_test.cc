#include "stoker/model/model_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace stoker::model {
namespace {

namespace fs = std::filesystem;

TEST(ModelConfigTest, PresetsCarryHubValues) {
  auto q25 = preset("qwen2.5-vl");
  ASSERT_TRUE(q25.ok());
  EXPECT_EQ(q25->family, ModelFamily::kQwen25VL);
  EXPECT_EQ(q25->image.patch_size, 14);
  EXPECT_EQ(q25->image.min_pixels, 3136);
  EXPECT_EQ(q25->image.max_pixels, 12845056);
  EXPECT_FLOAT_EQ(q25->image.image_mean[0], 0.48145466f);
  EXPECT_FLOAT_EQ(q25->image.image_std[2], 0.27577711f);
  EXPECT_EQ(q25->image_token_id, 151655);
  EXPECT_EQ(preset("Qwen2-VL")->family, ModelFamily::kQwen2VL);
  auto q3 = preset("qwen3-vl");
  ASSERT_TRUE(q3.ok());
  EXPECT_EQ(q3->family, ModelFamily::kQwen3VL);
  EXPECT_EQ(q3->image.patch_size, 16);
  EXPECT_EQ(q3->image.factor(), 32);
  EXPECT_EQ(q3->image.min_pixels, 65536);
  EXPECT_EQ(q3->image.max_pixels, 16777216);
  EXPECT_EQ(q3->image.image_mean[1], 0.5f);
  EXPECT_EQ(preset("llava").error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(family_name(ModelFamily::kQwen25VL), "qwen2_5_vl");
}

TEST(ModelConfigTest, LegacyMinMaxPixelsWinOverSize) {
  image::ImageProcessorConfig c;
  ASSERT_TRUE(parse_preprocessor_config(R"({"size": {"shortest_edge": 1000, "longest_edge": 2000000},
      "min_pixels": 3136, "max_pixels": 12845056})", &c).ok());
  EXPECT_EQ(c.min_pixels, 3136);
  EXPECT_EQ(c.max_pixels, 12845056);
  image::ImageProcessorConfig d;
  ASSERT_TRUE(parse_preprocessor_config(
      R"({"size": {"shortest_edge": 65536, "longest_edge": 16777216}, "max_pixels": null})", &d)
                  .ok());
  EXPECT_EQ(d.min_pixels, 65536);
  EXPECT_EQ(d.max_pixels, 16777216);
}

TEST(ModelConfigTest, SizeNeedsBothKeys) {
  image::ImageProcessorConfig c;
  const Status s = parse_preprocessor_config(R"({"size": {"shortest_edge": 3136}})", &c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().to_string().find("longest_edge"), std::string::npos);
}

TEST(ModelConfigTest, ReadsProcessorFieldsAndToleratesInertNulls) {
  image::ImageProcessorConfig c;
  ASSERT_TRUE(parse_preprocessor_config(R"({
      "image_processor_type": "Qwen2VLImageProcessorFast", "processor_class": "Qwen3VLProcessor",
      "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
      "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
      "rescale_factor": 0.00392156862745098, "resample": 3,
      "do_resize": true, "do_rescale": true, "do_normalize": false, "do_convert_rgb": true,
      "do_center_crop": null, "crop_size": null, "do_pad": null, "data_format": "channels_first",
      "default_to_square": true, "device": null, "disable_grouping": null,
      "size": {"shortest_edge": 65536, "longest_edge": 16777216}})", &c).ok());
  EXPECT_EQ(c.patch_size, 16);
  EXPECT_EQ(c.image_mean[2], 0.5f);
  EXPECT_FALSE(c.do_normalize);
  EXPECT_EQ(c.rescale_factor, 1.0 / 255.0);
  EXPECT_EQ(c.max_pixels, 16777216);
}

TEST(ModelConfigTest, BadValuesAreInvalidArgument) {
  for (const char* text : {R"({"patch_size": "14"})", R"({"image_mean": [0.5, 0.5]})",
                           R"({"do_resize": 1})", R"({"resample": 2})", R"({"patch_size": 14.5})",
                           R"({"min_pixels": 100, "max_pixels": 50})", R"([1, 2])", "{not json"}) {
    image::ImageProcessorConfig c;
    const Status s = parse_preprocessor_config(text, &c);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument) << text;
  }
}

class ModelFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("stoker_model_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  fs::path dir_;
};

TEST_F(ModelFolderTest, Qwen25Folder) {
  write("config.json", R"({"model_type": "qwen2_5_vl", "image_token_id": 151655,
      "vision_start_token_id": 151652, "vision_config": {"tokens_per_second": 2, "patch_size": 14}})");
  write("preprocessor_config.json", R"({"min_pixels": 3136, "max_pixels": 12845056,
      "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
      "image_mean": [0.48145466, 0.4578275, 0.40821073],
      "image_std": [0.26862954, 0.26130258, 0.27577711]})");
  auto m = load_model(dir_.string());
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->family, ModelFamily::kQwen25VL);
  EXPECT_EQ(m->folder, dir_.string());
  EXPECT_EQ(m->image.max_pixels, 12845056);
  EXPECT_EQ(m->tokens_per_second, 2);
}

TEST_F(ModelFolderTest, Qwen3MoeWithNestedIds) {
  write("config.json", R"({"model_type": "qwen3_vl_moe",
      "text_config": {"vision_start_token_id": 7, "image_token_id": 9}})");
  write("preprocessor_config.json",
        R"({"size": {"shortest_edge": 65536, "longest_edge": 16777216}, "patch_size": 16,
            "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]})");
  auto m = load_model(dir_.string());
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->family, ModelFamily::kQwen3VL);
  EXPECT_EQ(m->vision_start_token_id, 7);
  EXPECT_EQ(m->image_token_id, 9);
  EXPECT_EQ(m->video_token_id, 151656);  // default kept
  EXPECT_EQ(m->image.factor(), 32);
}

TEST_F(ModelFolderTest, ConfigOnlyUsesHubPreprocessorValues) {
  write("config.json", R"({"model_type": "qwen3_vl"})");
  auto m = load_model(dir_.string());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->image.min_pixels, 65536);
  EXPECT_EQ(m->image.patch_size, 16);
}

TEST_F(ModelFolderTest, Errors) {
  write("config.json", R"({"model_type": "llava"})");
  auto m = load_model(dir_.string());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(m.error().to_string().find("llava"), std::string::npos);
  write("config.json", R"({"model_type": "qwen2_vl"})");
  write("preprocessor_config.json", R"({"size": {"longest_edge": 5}})");
  m = load_model(dir_.string());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().to_string().find("preprocessor_config.json"), std::string::npos);
  EXPECT_EQ(load_model((dir_ / "missing").string()).error().code(), ErrorCode::kNotFound);
  fs::remove(dir_ / "config.json");
  fs::remove(dir_ / "preprocessor_config.json");
  EXPECT_EQ(load_model(dir_.string()).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(load_model("qwen2.5-vl")->family, ModelFamily::kQwen25VL);
}

}  // namespace
}  // namespace stoker::model

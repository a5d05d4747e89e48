#include "stoker/dataset/conversation.h"

#include <gtest/gtest.h>

namespace stoker::dataset {
namespace {

using Kind = Part::Kind;

Conversation parse_ok(std::string_view json, RecordFormat f = RecordFormat::kAuto) {
  Result<Conversation> r = parse_record(json, f);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
  return r.ok() ? *std::move(r) : Conversation{};
}

std::string parse_error(std::string_view json) {
  Result<Conversation> r = parse_record(json);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return {};
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  return r.error().to_string();
}

TEST(ConversationTest, ParsesOpenAIStringAndListContent) {
  Conversation c = parse_ok(R"({"id": 17, "messages": [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "image", "image": "a.jpg"},
                                 {"type": "text", "text": "What is this?"},
                                 {"type": "image_url", "image_url": {"url": "s3://b/c.png"}}]},
    {"role": "assistant", "content": "A cat."},
    {"role": "user", "content": [{"type": "video", "video": "v.mp4"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "A dog."}]}]})");
  EXPECT_EQ(c.id, "17");
  ASSERT_EQ(c.messages.size(), 5u);
  EXPECT_EQ(c.messages[0].role, Role::kSystem);
  EXPECT_TRUE(c.messages[0].content_is_string);
  ASSERT_EQ(c.messages[1].parts.size(), 3u);
  EXPECT_FALSE(c.messages[1].content_is_string);
  EXPECT_EQ(c.messages[1].parts[0].kind, Kind::kImage);
  EXPECT_EQ(c.messages[1].parts[0].value, "a.jpg");
  EXPECT_EQ(c.messages[1].parts[1].kind, Kind::kText);
  EXPECT_EQ(c.messages[1].parts[1].value, "What is this?");
  EXPECT_EQ(c.messages[1].parts[2].value, "s3://b/c.png");
  EXPECT_EQ(c.messages[3].parts[0].kind, Kind::kVideo);
  EXPECT_EQ(c.messages[4].role, Role::kAssistant);
  EXPECT_EQ(c.messages[4].parts[0].value, "A dog.");
  EXPECT_EQ(c.count(Kind::kImage), 2);
  EXPECT_EQ(c.count(Kind::kVideo), 1);
  EXPECT_TRUE(validate_for_sft(c).ok());
}

TEST(ConversationTest, ParsesShareGPTWithTagsInOrder) {
  Conversation c = parse_ok(R"({"conversations": [
    {"from": "human", "value": "<image>Compare with <image> and <video>."},
    {"from": "gpt", "value": "Same."}],
    "images": ["one.jpg", "two.jpg"], "videos": ["clip.mp4"], "system": "S"})");
  ASSERT_EQ(c.messages.size(), 3u);
  EXPECT_EQ(c.messages[0].role, Role::kSystem);
  EXPECT_EQ(c.messages[0].parts[0].value, "S");
  const auto& p = c.messages[1].parts;
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0].kind, Kind::kImage);
  EXPECT_EQ(p[0].value, "one.jpg");
  EXPECT_EQ(p[1].value, "Compare with ");
  EXPECT_EQ(p[2].kind, Kind::kImage);
  EXPECT_EQ(p[2].value, "two.jpg");
  EXPECT_EQ(p[3].value, " and ");
  EXPECT_EQ(p[4].kind, Kind::kVideo);
  EXPECT_EQ(p[4].value, "clip.mp4");
  EXPECT_EQ(p[5].value, ".");
  EXPECT_EQ(c.messages[2].role, Role::kAssistant);
}

TEST(ConversationTest, ParsesLlavaSingleImageKeepingNewline) {
  Conversation c = parse_ok(R"({"id": "000000033471", "image": "coco/33471.jpg",
    "conversations": [{"from": "human", "value": "<image>\nWhat color?"},
                      {"from": "gpt", "value": "Red."},
                      {"from": "human", "value": "Sure?"},
                      {"from": "gpt", "value": "Yes."}]})");
  EXPECT_EQ(c.id, "000000033471");
  ASSERT_EQ(c.messages.size(), 4u);
  ASSERT_EQ(c.messages[0].parts.size(), 2u);
  EXPECT_EQ(c.messages[0].parts[0].kind, Kind::kImage);
  EXPECT_EQ(c.messages[0].parts[0].value, "coco/33471.jpg");
  EXPECT_EQ(c.messages[0].parts[1].value, "\nWhat color?");
  EXPECT_TRUE(validate_for_sft(c).ok());
  // Forcing the format gives the same result.
  Conversation forced = parse_ok(R"({"image": "x.jpg", "conversations": [
    {"from": "human", "value": "<image>"}, {"from": "gpt", "value": "ok"}]})",
                                 RecordFormat::kLlava);
  EXPECT_EQ(forced.messages[0].parts[0].value, "x.jpg");
}

TEST(ConversationTest, OpenAIWithTopLevelImagesSplitsTags) {
  Conversation c = parse_ok(R"({"messages": [{"role": "user", "content": "<image>hi"},
    {"role": "assistant", "content": "yo"}], "images": ["p.png"]})");
  ASSERT_EQ(c.messages[0].parts.size(), 2u);
  EXPECT_EQ(c.messages[0].parts[0].kind, Kind::kImage);
  EXPECT_EQ(c.messages[0].parts[0].value, "p.png");
  // Without a media list, tag-looking text is text.
  Conversation t = parse_ok(R"({"messages": [{"role": "user", "content": "<image>hi"}]})");
  ASSERT_EQ(t.messages[0].parts.size(), 1u);
  EXPECT_EQ(t.messages[0].parts[0].value, "<image>hi");
}

TEST(ConversationTest, TagCountMismatchNamesCounts) {
  std::string more_tags = parse_error(R"({"id": "r1", "conversations": [
    {"from": "human", "value": "<image><image>"}, {"from": "gpt", "value": "x"}],
    "images": ["a.jpg"]})");
  EXPECT_NE(more_tags.find("record \"r1\""), std::string::npos) << more_tags;
  EXPECT_NE(more_tags.find("2 <image> tag(s)"), std::string::npos) << more_tags;
  EXPECT_NE(more_tags.find("1 image(s)"), std::string::npos) << more_tags;

  std::string fewer_tags = parse_error(R"({"conversations": [
    {"from": "human", "value": "look"}, {"from": "gpt", "value": "x"}],
    "images": ["a.jpg", "b.jpg"]})");
  EXPECT_NE(fewer_tags.find("0 <image> tag(s)"), std::string::npos) << fewer_tags;
  EXPECT_NE(fewer_tags.find("2 image(s)"), std::string::npos) << fewer_tags;

  std::string videos = parse_error(R"({"conversations": [
    {"from": "human", "value": "<video>"}, {"from": "gpt", "value": "x"}]})");
  EXPECT_NE(videos.find("1 <video> tag(s)"), std::string::npos) << videos;
  EXPECT_NE(videos.find("0 video(s)"), std::string::npos) << videos;
}

TEST(ConversationTest, MalformedJsonIsAClearError) {
  EXPECT_NE(parse_error(R"({"messages": [)").find("not valid JSON"), std::string::npos);
  EXPECT_NE(parse_error("[1, 2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(parse_error(R"({"id": "q", "text": "hi"})").find("record \"q\""), std::string::npos);
  EXPECT_NE(parse_error(R"({"messages": [{"role": "robot", "content": "x"}]})")
                .find("unknown role \"robot\""),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"messages": [{"role": "user", "content": 5}]})")
                .find("message 0"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"messages": [{"role": "user", "content": [{"type": "hologram"}]}]})")
                .find("unsupported content part type \"hologram\""),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"messages": [{"role": "user", "content": [{"type": "audio"}]}]})")
                .find("audio part without a reference"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"conversations": [{"from": "human"}]})").find("\"value\""),
            std::string::npos);
}

// Every prefix of a valid record and single-byte corruptions of it: an error or a value,
// never a crash (run under STOKER_SANITIZE for the memory side).
TEST(ConversationTest, TruncatedAndCorruptedRecordsNeverCrash) {
  const std::string rec = R"({"id": "z", "images": ["a.jpg"], "conversations": [
    {"from": "human", "value": "<image>\nhi"}, {"from": "gpt", "value": "yo"}]})";
  int errors = 0;
  for (std::size_t n = 0; n < rec.size(); ++n) errors += !parse_record(rec.substr(0, n)).ok();
  EXPECT_EQ(errors, static_cast<int>(rec.size()));  // no strict prefix is a whole object
  for (std::size_t i = 0; i < rec.size(); ++i) {
    for (char c : {'"', '{', ']', '\0', '\xff'}) {
      std::string bad = rec;
      bad[i] = c;
      (void)parse_record(bad);
    }
  }
  EXPECT_TRUE(parse_record(rec).ok());
}

Conversation roles(std::initializer_list<Role> rs) {
  Conversation c;
  c.id = "t";
  for (Role r : rs) c.messages.push_back({r, {{Kind::kText, "x"}}, true});
  return c;
}

std::string invalid(const Conversation& c) {
  Status s = validate_for_sft(c);
  EXPECT_FALSE(s.ok());
  return s.ok() ? std::string() : s.error().to_string();
}

TEST(ConversationTest, ValidateForSft) {
  using R = Role;
  EXPECT_TRUE(validate_for_sft(roles({R::kUser, R::kAssistant})).ok());
  EXPECT_TRUE(validate_for_sft(roles({R::kSystem, R::kUser, R::kAssistant, R::kUser})).ok());
  EXPECT_TRUE(validate_for_sft(
                  roles({R::kUser, R::kAssistant, R::kTool, R::kTool, R::kAssistant})).ok());
  EXPECT_NE(invalid(roles({})).find("no messages"), std::string::npos);
  EXPECT_NE(invalid(roles({R::kSystem, R::kUser})).find("no assistant turn"), std::string::npos);
  std::string e = invalid(roles({R::kUser, R::kAssistant, R::kSystem, R::kAssistant}));
  EXPECT_NE(e.find("message 2 (system)"), std::string::npos) << e;
  e = invalid(roles({R::kUser, R::kUser, R::kAssistant}));
  EXPECT_NE(e.find("message 1 (user): two user turns"), std::string::npos) << e;
  e = invalid(roles({R::kUser, R::kAssistant, R::kAssistant}));
  EXPECT_NE(e.find("message 2 (assistant)"), std::string::npos) << e;
  e = invalid(roles({R::kAssistant, R::kUser}));
  EXPECT_NE(e.find("start with a user turn"), std::string::npos) << e;
  e = invalid(roles({R::kUser, R::kTool, R::kAssistant}));
  EXPECT_NE(e.find("message 1 (tool)"), std::string::npos) << e;
  // Media in any turn: the chat template decides (text/labels.h counts its placeholders).
  Conversation media_anywhere = roles({R::kSystem, R::kUser, R::kAssistant});
  media_anywhere.messages[0].parts.push_back({Kind::kImage, "a.jpg"});
  media_anywhere.messages[2].parts.push_back({Kind::kVideo, "v.mp4"});
  EXPECT_TRUE(validate_for_sft(media_anywhere).ok());
}

}  // namespace
}  // namespace stoker::dataset

namespace stoker::dataset {
namespace {

TEST(VideoParts, OpenAIWithOptionsAndFrameLists) {
  auto c = parse_record(R"({"messages":[{"role":"user","content":[
      {"type":"video","video":"a.mp4","fps":1,"video_start":1.5,"video_end":9,"max_pixels":50176},
      {"type":"video","video":["f0.jpg","f1.jpg","f2.jpg"],"sample_fps":1},
      {"type":"text","text":"what happens?"}]},
      {"role":"assistant","content":"a dog runs"}]})");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  const auto& parts = c->messages[0].parts;
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].kind, Part::Kind::kVideo);
  EXPECT_EQ(parts[0].value, "a.mp4");
  EXPECT_EQ(*parts[0].video.fps, 1.0);
  EXPECT_EQ(*parts[0].video.video_start, 1.5);
  EXPECT_EQ(*parts[0].video.video_end, 9.0);
  EXPECT_EQ(*parts[0].video.max_pixels, 50176.0);
  EXPECT_FALSE(parts[0].video.nframes.has_value());
  EXPECT_EQ(parts[1].frames, (std::vector<std::string>{"f0.jpg", "f1.jpg", "f2.jpg"}));
  EXPECT_TRUE(parts[1].value.empty());
  EXPECT_EQ(*parts[1].video.sample_fps, 1.0);
  EXPECT_EQ(c->count(Part::Kind::kVideo), 2);
}

TEST(VideoParts, ShareGPTVideosList) {
  auto c = parse_record(R"({"conversations":[{"from":"human","value":"<video><video>Compare."},
      {"from":"gpt","value":"same"}],
      "videos":["a.mp4", {"video":"b.webm","nframes":8}, ["f0.png","f1.png"]]})");
  ASSERT_FALSE(c.ok());  // three videos, two tags: refused with the counts
  EXPECT_NE(c.error().to_string().find("2 <video> tag(s)"), std::string::npos);
  c = parse_record(R"({"conversations":[{"from":"human","value":"<video><video><video>Compare."},
      {"from":"gpt","value":"same"}],
      "videos":["a.mp4", {"video":"b.webm","nframes":8}, ["f0.png","f1.png"]]})");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  const auto& parts = c->messages[0].parts;
  EXPECT_EQ(parts[0].value, "a.mp4");
  EXPECT_EQ(parts[1].value, "b.webm");
  EXPECT_EQ(*parts[1].video.nframes, 8.0);
  EXPECT_EQ(parts[2].frames.size(), 2u);
}

TEST(AudioParts, OpenAIPartsWithRangesAndVideoTracks) {
  auto c = parse_record(R"({"messages":[{"role":"user","content":[
      {"type":"audio","audio":"a.wav","audio_start":1,"audio_end":4.5},
      {"type":"audio_url","audio_url":{"url":"s3://b/c.flac"}},
      {"type":"video","video":"v.mp4","use_audio_in_video":true},
      {"type":"video","video":"w.mp4"},
      {"type":"text","text":"<audio> stays text here"}]},
      {"role":"assistant","content":"sounds"}]})");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  const auto& parts = c->messages[0].parts;
  ASSERT_EQ(parts.size(), 5u);
  EXPECT_EQ(parts[0].kind, Part::Kind::kAudio);
  EXPECT_EQ(parts[0].value, "a.wav");
  EXPECT_EQ(*parts[0].audio.audio_start, 1.0);
  EXPECT_EQ(*parts[0].audio.audio_end, 4.5);
  EXPECT_EQ(parts[1].value, "s3://b/c.flac");
  EXPECT_FALSE(parts[1].audio.audio_start.has_value());
  EXPECT_TRUE(parts[2].video.use_audio_in_video);
  EXPECT_FALSE(parts[3].video.use_audio_in_video);
  EXPECT_FALSE(parts[2].video.any());  // not a sampling key
  EXPECT_EQ(parts[4].value, "<audio> stays text here");
  EXPECT_EQ(c->count(Part::Kind::kAudio), 2);
  // The record's flag marks every video.
  c = parse_record(R"({"use_audio_in_video":true,"messages":[{"role":"user","content":[
      {"type":"video","video":"v.mp4"},{"type":"video","video":"w.mp4"}]},
      {"role":"assistant","content":"x"}]})");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_TRUE(c->messages[0].parts[0].video.use_audio_in_video);
  EXPECT_TRUE(c->messages[0].parts[1].video.use_audio_in_video);
}

TEST(AudioParts, ShareGPTAudiosListAndTags) {
  auto c = parse_record(R"({"conversations":[{"from":"human","value":"<audio>Hear<image><audio>?"},
      {"from":"gpt","value":"ok"}],"images":["i.png"],
      "audios":["a.wav", {"audio":"b.mp3","audio_start":0.5,"audio_end":2}]})");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  const auto& parts = c->messages[0].parts;
  ASSERT_EQ(parts.size(), 5u);
  EXPECT_EQ(parts[0].kind, Part::Kind::kAudio);
  EXPECT_EQ(parts[0].value, "a.wav");
  EXPECT_EQ(parts[1].value, "Hear");
  EXPECT_EQ(parts[2].kind, Part::Kind::kImage);
  EXPECT_EQ(parts[3].value, "b.mp3");
  EXPECT_EQ(*parts[3].audio.audio_end, 2.0);
  EXPECT_EQ(parts[4].value, "?");
  // Counts must match, naming them.
  c = parse_record(R"({"conversations":[{"from":"human","value":"<audio><audio>"},
      {"from":"gpt","value":"x"}],"audios":["a.wav"]})");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().to_string().find("2 <audio> tag(s) in the text but 1 audio(s)"),
            std::string::npos);
  // Without an audios list, "<audio>" is text (records written before audio parts existed).
  c = parse_record(R"({"conversations":[{"from":"human","value":"<audio> tag"},
      {"from":"gpt","value":"x"}],"images":[]})");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->messages[0].parts[0].value, "<audio> tag");
}

TEST(AudioParts, BadRangesAreRefused) {
  for (const char* bad : {R"("audio_start":"x")", R"("audio_start":-1)",
                          R"("audio_start":2,"audio_end":1)", R"("audio_end":1e300)"}) {
    auto c = parse_record(std::string(R"({"messages":[{"role":"user","content":[
        {"type":"audio","audio":"a.wav",)") + bad + R"(}]},{"role":"assistant","content":"x"}]})");
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(c.error().to_string().find("audio"), std::string::npos) << bad;
  }
  auto c = parse_record(R"({"use_audio_in_video":"yes","messages":[{"role":"user","content":"x"},
      {"role":"assistant","content":"x"}]})");
  ASSERT_FALSE(c.ok());
}

TEST(VideoParts, BadOptionsAreRefused) {
  auto c = parse_record(R"({"messages":[{"role":"user","content":[
      {"type":"video","video":"a.mp4","fps":"fast"}]},{"role":"assistant","content":"x"}]})");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().to_string().find("\"fps\" must be a number"), std::string::npos);
  c = parse_record(R"({"messages":[{"role":"user","content":[
      {"type":"video","video":[]}]},{"role":"assistant","content":"x"}]})");
  ASSERT_FALSE(c.ok());
  c = parse_record(R"({"messages":[{"role":"user","content":[
      {"type":"video","video":[1,2]}]},{"role":"assistant","content":"x"}]})");
  ASSERT_FALSE(c.ok());
}

TEST(ConversationTest, KeepsWhatTheChatTemplateReadsBesideTheMessages) {
  Result<Conversation> c = parse_record(R"({"id": "t", "tools": [{"type": "function", "function": {"name": "f", "parameters": {"x": 1.0}}}],
      "documents": [{"title": "d", "text": "é"}], "chat_template_kwargs": {"enable_thinking": false},
      "messages": [{"role": "user", "content": "hi"},
                   {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 2}}}]},
                   {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "42"},
                   {"role": "assistant", "content": "done"}]})");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->tools_json, R"([{"type":"function","function":{"name":"f","parameters":{"x":1.0}}}])");
  EXPECT_EQ(c->documents_json, R"([{"title":"d","text":"é"}])");
  EXPECT_EQ(c->template_kwargs_json, R"({"enable_thinking":false})");
  EXPECT_EQ(c->messages[0].extra_json, "");
  EXPECT_EQ(c->messages[1].extra_json,
            R"({"tool_calls":[{"type":"function","function":{"name":"f","arguments":{"x":2}}}]})");
  EXPECT_TRUE(c->messages[1].parts.empty());
  EXPECT_EQ(c->messages[2].extra_json, R"({"tool_call_id":"c1","name":"f"})");
  EXPECT_FALSE(c->plain());
  EXPECT_TRUE(validate_for_sft(*c).ok());
  // LLaMA-Factory's ShareGPT writes the tools as a JSON string: kept as that list's text.
  Result<Conversation> s = parse_record(R"({"tools": "[{\"name\": \"f\"}]", "conversations": [
      {"from": "human", "value": "hi"}, {"from": "gpt", "value": "ok"}]})");
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->tools_json, R"([{"name": "f"}])");
  Result<Conversation> plain = parse_record(R"({"messages": [{"role": "user", "content": "a"}]})");
  EXPECT_TRUE(plain->plain());
  for (const char* bad : {R"({"tools": 3, "messages": []})", R"({"documents": {}, "messages": []})",
                          R"({"chat_template_kwargs": [1], "messages": []})"}) {
    Result<Conversation> r = parse_record(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace stoker::dataset

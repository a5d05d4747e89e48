#include "stoker/io/aws_config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

extern char** environ;

namespace stoker::io {
namespace {

std::string trim(const std::string& s) {
  std::size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  std::size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

std::string get(const EnvLookup& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

std::map<std::string, std::string> read_profile(const std::string& path, const std::string& name,
                                                bool config_file) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  auto ini = parse_ini(ss.str());
  // ~/.aws/config names non-default profiles "[profile NAME]"; ~/.aws/credentials just "[NAME]".
  if (config_file && name != "default") {
    auto it = ini.find("profile " + name);
    if (it != ini.end()) return it->second;
  }
  auto it = ini.find(name);
  return it == ini.end() ? std::map<std::string, std::string>{} : it->second;
}

}  // namespace

std::map<std::string, std::map<std::string, std::string>> parse_ini(const std::string& text) {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = trim(line.substr(1, line.size() - 2));
      out[section];
      continue;
    }
    std::size_t eq = line.find('=');
    if (eq == std::string::npos || section.empty()) continue;
    out[section][trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return out;
}

std::string AwsConfig::to_string() const {
  std::string key = access_key_id.empty() ? "(anonymous)" : access_key_id.substr(0, 4) + "…";
  return "key=" + key + " region=" + region + " endpoint=" +
         (endpoint.empty() ? "(aws)" : endpoint) + (path_style ? " path-style" : "");
}

AwsProfile load_aws_profile(const EnvLookup& env) {
  AwsProfile p;
  const std::string home = get(env, "HOME");
  p.name = get(env, "AWS_PROFILE");
  if (p.name.empty()) p.name = "default";
  std::string cred_path = get(env, "AWS_SHARED_CREDENTIALS_FILE");
  if (cred_path.empty() && !home.empty()) cred_path = home + "/.aws/credentials";
  std::string conf_path = get(env, "AWS_CONFIG_FILE");
  if (conf_path.empty() && !home.empty()) conf_path = home + "/.aws/config";
  if (!cred_path.empty()) p.credentials_file = read_profile(cred_path, p.name, false);
  if (!conf_path.empty()) p.config_file = read_profile(conf_path, p.name, true);
  return p;
}

std::map<std::string, std::string> AwsProfile::merged() const {
  std::map<std::string, std::string> m = config_file;
  for (const auto& [k, v] : credentials_file) m[k] = v;
  return m;
}

Result<AwsConfig> load_aws_config(const EnvLookup& env) {
  AwsConfig c;
  const AwsProfile files = load_aws_profile(env);
  const std::string& profile = files.name;
  const auto& creds = files.credentials_file;
  auto conf = files.config_file;  // a copy: operator[] below

  if (!get(env, "AWS_ACCESS_KEY_ID").empty()) {
    c.access_key_id = get(env, "AWS_ACCESS_KEY_ID");
    c.secret_access_key = get(env, "AWS_SECRET_ACCESS_KEY");
    c.session_token = get(env, "AWS_SESSION_TOKEN");
    if (c.secret_access_key.empty())
      return invalid_argument("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  } else {
    using Section = std::map<std::string, std::string>;
    for (const Section* src : std::initializer_list<const Section*>{&creds, &conf}) {
      auto id = src->find("aws_access_key_id");
      if (id == src->end()) continue;
      c.access_key_id = id->second;
      auto secret = src->find("aws_secret_access_key");
      if (secret == src->end())
        return invalid_argument("profile '" + profile + "' has a key id but no secret");
      c.secret_access_key = secret->second;
      auto token = src->find("aws_session_token");
      if (token != src->end()) c.session_token = token->second;
      break;
    }
  }
  if (!get(env, "AWS_REGION").empty()) {
    c.region = get(env, "AWS_REGION");
  } else if (!get(env, "AWS_DEFAULT_REGION").empty()) {
    c.region = get(env, "AWS_DEFAULT_REGION");
  } else if (conf.count("region")) {
    c.region = conf["region"];
  }
  if (!get(env, "AWS_ENDPOINT_URL_S3").empty()) {
    c.endpoint = get(env, "AWS_ENDPOINT_URL_S3");
  } else if (!get(env, "AWS_ENDPOINT_URL").empty()) {
    c.endpoint = get(env, "AWS_ENDPOINT_URL");
  } else if (conf.count("endpoint_url")) {
    c.endpoint = conf["endpoint_url"];
  }
  while (!c.endpoint.empty() && c.endpoint.back() == '/') c.endpoint.pop_back();
  c.path_style = !c.endpoint.empty();
  return c;
}

EnvLookup aws_environment() {
  EnvLookup env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    std::size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq);
    if (k == "HOME" || k.rfind("AWS_", 0) == 0) env[k] = kv.substr(eq + 1);
  }
  return env;
}

Result<AwsConfig> load_aws_config() { return load_aws_config(aws_environment()); }

}  // namespace stoker::io

#include "kineto_fields.h"

#include <charconv>
#include <cmath>

#include "json_stream.h"

namespace gpuscope::importer {
namespace {

namespace od = simdjson::ondemand;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

void read_string(od::value& v, std::string_view* out) {
  if (v.get_string().get(*out) != simdjson::SUCCESS) *out = {};
}

// A number (or a string holding one, as "stream 7" or "12"): its integer
// part; -1 when there is none.
int64_t read_int(od::value v) {
  od::json_type type;
  if (v.type().get(type)) return -1;
  std::string_view text;
  if (type == od::json_type::string) {
    if (v.get_string().get(text)) return -1;
    const size_t digit = text.find_first_of("0123456789");
    if (digit == std::string_view::npos || (digit > 0 && text[digit - 1] == '-')) return -1;
    text.remove_prefix(digit);
  } else if (type == od::json_type::number) {
    text = v.raw_json_token();
  } else {
    return -1;
  }
  text = trim(text);
  int64_t out = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc()) return -1;
  if (end < text.data() + text.size() && (*end == '.' || *end == 'e' || *end == 'E')) {
    double d = 0;
    if (std::from_chars(text.data(), text.data() + text.size(), d).ec == std::errc() && std::isfinite(d) &&
        std::fabs(d) < 9e18)
      out = static_cast<int64_t>(d);
  }
  return out;
}

std::optional<uint64_t> read_microseconds(od::value v) {
  return microseconds_text_to_ns(trim(v.raw_json_token()));
}

void read_dims(od::value v, uint32_t out[3]) {
  od::array a;
  if (v.get_array().get(a)) return;
  size_t i = 0;
  for (auto element : a) {
    od::value item;
    if (std::move(element).get(item) || i == 3) break;
    const int64_t n = read_int(item);
    out[i++] = n > 0 && n <= UINT32_MAX ? static_cast<uint32_t>(n) : 0;
  }
}

void read_args(od::value v, KinetoArgs* args) {
  od::object obj;
  if (v.get_object().get(obj)) return;
  for (auto field_result : obj) {
    od::field field;
    std::string_view key;
    if (std::move(field_result).get(field) || field.unescaped_key().get(key)) return;
    od::value value = field.value();
    if (key == "correlation") args->correlation = read_int(value);
    else if (key == "device") args->device = read_int(value);
    else if (key == "stream") args->stream = read_int(value);
    else if (key == "bytes") args->bytes = read_int(value);
    else if (key == "grid") read_dims(value, args->grid);
    else if (key == "block") read_dims(value, args->block);
    else if (key == "Addr") args->addr = read_int(value);
    else if (key == "Bytes") args->alloc_bytes = read_int(value);
    else if (key == "Device Id") args->device_id = read_int(value);
    else if (key == "Device Type") args->device_type = read_int(value);
    else if (key == "name") read_string(value, &args->name);
  }
}

}  // namespace

std::optional<uint64_t> microseconds_text_to_ns(std::string_view text) {
  if (text.empty() || text.front() == '-') return std::nullopt;
  const char* p = text.data();
  const char* end = p + text.size();
  uint64_t us = 0;
  const auto [after, ec] = std::from_chars(p, end, us);
  if (ec != std::errc() || us > UINT64_MAX / 1000 - 1) return std::nullopt;
  uint64_t ns = us * 1000;
  const char* q = after;
  if (q < end && *q == '.') {
    uint64_t scale = 100;
    for (++q; q < end && *q >= '0' && *q <= '9'; ++q, scale /= 10)
      if (scale > 0) ns += static_cast<uint64_t>(*q - '0') * scale;
  }
  if (q == end) return ns;
  // An exponent ("1.5e3"): rare, and then a double is all there was; the
  // whole text must be the number.
  double d = 0;
  const auto [stop, dec] = std::from_chars(p, end, d);
  if (dec != std::errc() || stop != end || !(d >= 0) || d > 1.8e16) return std::nullopt;
  return static_cast<uint64_t>(std::llround(d * 1000.0));
}

bool parse_kineto_event(od::parser& parser, std::string_view element, KinetoEvent* out, std::string* error) {
  *out = KinetoEvent{};
  od::document doc;
  od::object obj;
  if (parser.iterate(element.data(), element.size(), element.size() + kElementPadding).get(doc) ||
      doc.get_object().get(obj)) {
    *error = "a traceEvents element is not a JSON object";
    return false;
  }
  for (auto field_result : obj) {
    od::field field;
    std::string_view key;
    if (std::move(field_result).get(field) || field.unescaped_key().get(key)) {
      *error = "malformed JSON inside a traceEvents element";
      return false;
    }
    od::value v = field.value();
    if (key == "ph") read_string(v, &out->ph);
    else if (key == "cat") read_string(v, &out->cat);
    else if (key == "name") read_string(v, &out->name);
    else if (key == "pid") out->pid = read_int(v);
    else if (key == "tid") out->tid = read_int(v);
    else if (key == "ts") out->ts_ns = read_microseconds(v);
    else if (key == "dur") out->dur_ns = read_microseconds(v).value_or(0);
    else if (key == "args") read_args(v, &out->args);
  }
  if (out->ts_ns && *out->ts_ns > (uint64_t{1} << 62)) out->ts_ns.reset();
  return true;
}

namespace {

void apply_device_properties(od::value v, TraceBuilder& builder) {
  od::array devices;
  if (v.get_array().get(devices)) return;
  for (auto element : devices) {
    od::object obj;
    if (std::move(element).get_object().get(obj)) return;
    container::DeviceDescription d;
    for (auto field_result : obj) {
      od::field field;
      std::string_view key, text;
      if (std::move(field_result).get(field) || field.unescaped_key().get(key)) return;
      od::value value = field.value();
      if (key == "id") d.index = static_cast<uint32_t>(std::max<int64_t>(read_int(value), 0));
      else if (key == "name" && !value.get_string().get(text)) d.name = std::string(text);
      else if (key == "totalGlobalMem") d.memory_total_bytes = static_cast<uint64_t>(std::max<int64_t>(read_int(value), 0));
    }
    builder.add_device(std::move(d));
  }
}

void apply_distributed_info(od::value v, TraceBuilder& builder) {
  od::object obj;
  if (v.get_object().get(obj)) return;
  auto& process = builder.process();
  for (auto field_result : obj) {
    od::field field;
    std::string_view key;
    if (std::move(field_result).get(field) || field.unescaped_key().get(key)) return;
    od::value value = field.value();
    const auto as_int = [&] { return static_cast<int>(std::clamp<int64_t>(read_int(value), -1, INT32_MAX)); };
    if (key == "rank") process.rank = as_int();
    else if (key == "world_size") process.world_size = as_int();
    else if (key == "local_rank") process.local_rank = as_int();
  }
  if (process.rank >= 0) process.rank_source = "distributedInfo";
}

}  // namespace

void apply_kineto_member(od::parser& parser, std::string_view key, std::string_view value, TraceBuilder& builder) {
  od::document doc;
  if (parser.iterate(value.data(), value.size(), value.size() + kElementPadding).get(doc)) return;
  od::value v;
  if (key == "deviceProperties" && !doc.get_value().get(v)) apply_device_properties(v, builder);
  else if (key == "distributedInfo" && !doc.get_value().get(v)) apply_distributed_info(v, builder);
  else if (key == "schemaVersion") builder.set_producer("PyTorch profiler (Kineto) schema " + std::string(trim(value)));
  else if (key == "baseTimeNanoseconds") {
    uint64_t base = 0;
    const auto t = trim(value);
    if (std::from_chars(t.data(), t.data() + t.size(), base).ec == std::errc()) builder.set_realtime_base_ns(base);
  }
}

}  // namespace gpuscope::importer

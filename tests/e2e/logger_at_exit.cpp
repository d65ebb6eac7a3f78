// main() returns while a library's logger thread still has a line to write
// at exit (async_logger.cpp).
extern "C" void async_logger_log(const char* line);

int main() {
  async_logger_log("main: done");
  return 0;
}

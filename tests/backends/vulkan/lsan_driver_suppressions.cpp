// LeakSanitizer's built-in suppressions for the vulkan test binaries (read only in sanitized
// builds; an unused symbol otherwise). Mesa's lavapipe (libvulkan_lvp.so) keeps a few 48-byte
// blocks it allocates while compiling compute pipelines after vkDestroyDevice: the leak's stack
// has lavapipe's malloc call and no tern frame. tern's own leaks are still reported.
// Same rule as lsan_driver.supp, which the Python model tests pass to `tern` via LSAN_OPTIONS.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libvulkan_lvp.so\n";
}

// Storage element type of every f32 value's buffer: float, or float16_t when compiled with
// -DSTORAGE_F16 (the f16-storage variants; GL_EXT_shader_16bit_storage allows only loads and
// stores with conversion, so every read is float(...) and every write STORE_T(...), and all
// arithmetic and accumulation stays f32).
#ifdef STORAGE_F16
#extension GL_EXT_shader_16bit_storage : require
#define STORE_T float16_t
#else
#define STORE_T float
#endif

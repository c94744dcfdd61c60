// serialize_program round trips, read back through Program / MethodMeta and the FlatBuffer.
#include "tools/compiler/serializer.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/loader/buffer_data_loader.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"
#include "schema/program_generated.h"
#include "tests/compiler/serializer_test_util.h"
#include "tools/compiler/graph_builder.h"
#include "tools/compiler/memory_planner.h"

namespace tern::compiler {
namespace {

using testing::tensor;

Value constant(const std::string& name, std::vector<int64_t> sizes, size_t nbytes, uint8_t seed) {
  Value v = tensor(name, std::move(sizes));
  v.is_constant = true;
  v.data.mutable_vector().resize(nbytes);
  for (size_t i = 0; i < nbytes; ++i) v.data.mutable_vector()[i] = static_cast<uint8_t>(seed + i * 3);
  return v;
}

Value int_value(int64_t i) {
  Value v;
  v.kind = Value::Kind::Int;
  v.int_value = i;
  return v;
}

MemoryPlan plan_for(size_t num_values, std::vector<std::pair<int, int64_t>> offsets,
                    uint64_t arena_size) {
  MemoryPlan plan;
  plan.offsets.assign(num_values, -1);
  plan.alias_of.assign(num_values, -1);
  plan.lifetimes.resize(num_values);
  for (auto [id, off] : offsets) plan.offsets[static_cast<size_t>(id)] = off;
  plan.arena_size = arena_size;
  plan.lower_bound = arena_size;
  return plan;
}

/// A loaded program that owns its bytes.
struct Loaded {
  std::vector<uint8_t> bytes;
  BufferDataLoader loader{nullptr, 0};
  Result<Program> program = Error::Internal;
};

std::unique_ptr<Loaded> load(std::vector<uint8_t> bytes) {
  auto l = std::make_unique<Loaded>();
  l->bytes = std::move(bytes);
  l->loader = BufferDataLoader(l->bytes.data(), l->bytes.size());
  l->program = Program::load(&l->loader);
  return l;
}

uint64_t u64_at(const std::vector<uint8_t>& b, size_t at) { return testing::read_u64(b, at); }

/// x f32[1,8] -> linear-ish chain with weight w f32[8,8], bias b f32[8], a reshape view r of y.
using Mlp = testing::PlannedProgram;

Mlp mlp() {
  Graph g;
  g.values.push_back(tensor("x", {1, 8}));            // 0
  g.values.push_back(constant("w", {8, 8}, 256, 1));  // 1
  g.values.push_back(constant("b", {8}, 32, 50));     // 2
  g.values.push_back(tensor("y", {1, 8}));            // 3
  g.values.push_back(tensor("z", {1, 8}));            // 4
  g.values.push_back(tensor("r", {8}));               // 5: view of z
  g.values.push_back(tensor("wt", {64}));             // 6: view of w (constant)
  g.nodes.push_back(Node{"tern::linear", {0, 1, 2}, {3}, "fc1"});
  g.nodes.push_back(Node{"tern::relu", {3}, {4}, "act"});
  g.nodes.push_back(Node{"tern::reshape", {4}, {5}, "flat"});
  g.nodes.push_back(Node{"tern::reshape", {1}, {6}, "wflat"});
  g.inputs = {0};
  g.outputs = {5, 6};
  MemoryPlan plan = plan_for(g.values.size(), {{0, 0}, {3, 64}, {4, 128}}, 192);
  plan.alias_of[5] = 4;
  plan.alias_of[6] = 1;
  Mlp m;
  m.program.source_model = "mlp.py";
  m.program.metadata["author"] = "test";
  m.program.methods.push_back(g);
  m.plans.push_back(plan);
  return m;
}

TEST(Serializer, LayoutOfTheFile) {
  Mlp m = mlp();
  const auto bytes = serialize_program(m.program, m.plans);
  ASSERT_GE(bytes.size(), 64u);
  EXPECT_EQ(0, std::memcmp(bytes.data(), "TERNPTE\0", 8));
  EXPECT_EQ(u64_at(bytes, 16), 64u);  // the FlatBuffer right after the header
  const uint64_t fb_size = u64_at(bytes, 24);
  const uint64_t area = u64_at(bytes, 32);
  EXPECT_EQ(area % 64, 0u);
  EXPECT_GE(area, 64 + fb_size);
  EXPECT_LT(area, 64 + fb_size + 64);  // the next multiple, not further
  EXPECT_EQ(0, std::memcmp(bytes.data() + 64 + 4, "TRNP", 4));
  // Two segments (w, b): 256 bytes, then 32 at offset 256.
  EXPECT_EQ(u64_at(bytes, 40), 256u + 32u);
  EXPECT_EQ(bytes.size(), area + 288);
  // The header checksum, computed independently.
  std::vector<uint8_t> hashed(bytes.begin(), bytes.begin() + static_cast<long>(64 + fb_size));
  std::memset(hashed.data() + 48, 0, 8);
  EXPECT_EQ(u64_at(bytes, 48), XXH3_64bits(hashed.data(), hashed.size()));
  // The weights sit verbatim in the segment area.
  EXPECT_EQ(0, std::memcmp(bytes.data() + area, m.program.methods[0].values[1].data.data(), 256));
  EXPECT_EQ(0,
            std::memcmp(bytes.data() + area + 256, m.program.methods[0].values[2].data.data(), 32));
}

// Bounded-dynamic shapes (docs/dynamic-shapes.md) make the file 1.1 and write symbols,
// dim_symbols and symbolic ints.
TEST(Serializer, DynamicShapesWriteFormat11) {
  GraphBuilder b("forward");
  const int seq = b.symbol("seq", 2, 8);
  const int x = b.input("x", DType::F32, {8, 3});
  b.dynamic_dims(x, {seq, -1});
  const int shape = b.int_list({1, 8, 3});
  b.int_symbols(shape, {-1, seq, -1});
  const int y = b.op("tern::view", {x, shape}, DType::F32, {1, 8, 3}, "lift");
  b.dynamic_dims(y, {-1, seq, -1});
  b.output(y);
  ProgramGraph program;
  program.methods.push_back(b.build());
  const std::vector<uint8_t> bytes =
      serialize_program(program, {plan_memory(program.methods[0])});
  auto l = load(bytes);
  ASSERT_TRUE(l->program.ok()) << last_error_message();
  const fb::Program* root = l->program.get().flatbuffer();
  EXPECT_EQ(root->version(), 1001u);
  const fb::Method* m = root->methods()->Get(0);
  ASSERT_EQ(m->symbols()->size(), 1u);
  EXPECT_STREQ(m->symbols()->Get(0)->name()->c_str(), "seq");
  EXPECT_EQ(m->symbols()->Get(0)->min(), 2);
  EXPECT_EQ(m->symbols()->Get(0)->max(), 8);
  const fb::Tensor* tx = m->values()->Get(static_cast<uint32_t>(x))->value_as_Tensor();
  EXPECT_EQ(tx->dynamism(), fb::ShapeDynamism::DynamicBound);
  ASSERT_EQ(tx->dim_symbols()->size(), 2u);
  EXPECT_EQ(tx->dim_symbols()->Get(0), 0);
  EXPECT_EQ(tx->dim_symbols()->Get(1), -1);
  ASSERT_EQ(m->symbolic_ints()->size(), 1u);
  EXPECT_EQ(m->symbolic_ints()->Get(0)->value(), static_cast<uint32_t>(shape));
  EXPECT_EQ(m->symbolic_ints()->Get(0)->item(), 1);
  EXPECT_EQ(m->symbolic_ints()->Get(0)->symbol(), 0u);
}

TEST(Serializer, RoundTripsThroughProgramAndMethodMeta) {
  Mlp m = mlp();
  auto l = load(serialize_program(m.program, m.plans));
  ASSERT_TRUE(l->program.ok()) << last_error_message();
  Program& p = l->program.get();
  ASSERT_EQ(p.num_methods(), 1u);
  EXPECT_STREQ(*p.method_name(0), "forward");
  const fb::Program* root = p.flatbuffer();
  // A program without dynamic shapes is still written as format 1.0.
  EXPECT_EQ(root->version(), kFormatVersionMajor * 1000u);
  EXPECT_STREQ(root->producer()->c_str(), "tern");
  EXPECT_STREQ(root->source_model()->c_str(), "mlp.py");
  ASSERT_EQ(root->metadata()->size(), 1u);
  EXPECT_STREQ(root->metadata()->Get(0)->key()->c_str(), "author");
  EXPECT_STREQ(root->metadata()->Get(0)->value()->c_str(), "test");

  auto meta = p.method_meta("forward");
  ASSERT_TRUE(meta.ok());
  ASSERT_EQ(meta->num_inputs(), 1u);
  ASSERT_EQ(meta->num_outputs(), 2u);
  auto x = meta->input_tensor_info(0);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->dtype, DType::F32);
  ASSERT_EQ(x->sizes.size(), 2u);
  EXPECT_EQ(x->sizes[0], 1);
  EXPECT_EQ(x->sizes[1], 8);
  EXPECT_EQ(x->nbytes, 32u);
  auto r = meta->output_tensor_info(0);
  ASSERT_TRUE(r.ok());
  EXPECT_STREQ(r->name, "r");
  EXPECT_EQ(r->nbytes, 32u);
  EXPECT_EQ(*meta->output_tag(1), EValue::Tag::Tensor);
  EXPECT_EQ(*meta->arena_size(0), 192u);
  EXPECT_EQ(*meta->arena_alignment(0), 64u);
  EXPECT_EQ(*meta->arena_lower_bound(0), 192u);
  EXPECT_EQ(meta->arena_size(1).error(), Error::InvalidArgument);
  EXPECT_EQ(meta->input_tag(1).error(), Error::InvalidArgument);
  EXPECT_EQ(meta->num_instructions(), 4u);
  EXPECT_EQ(meta->num_delegates(), 0u);

  const fb::Method* method = meta->flatbuffer();
  // Operators deduplicated in first-use order.
  ASSERT_EQ(method->operators()->size(), 3u);
  EXPECT_STREQ(method->operators()->Get(0)->c_str(), "tern::linear");
  EXPECT_STREQ(method->operators()->Get(1)->c_str(), "tern::relu");
  EXPECT_STREQ(method->operators()->Get(2)->c_str(), "tern::reshape");
  const fb::KernelCall* last = method->instructions()->Get(3)->kind_as_KernelCall();
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->op(), 2u);
  ASSERT_EQ(last->args()->size(), 2u);  // args then outputs
  EXPECT_EQ(last->args()->Get(0), 1);
  EXPECT_EQ(last->args()->Get(1), 6);
  EXPECT_STREQ(method->instructions()->Get(0)->debug_name()->c_str(), "fc1");

  // Storage: x, y, z in the arena at the planned offsets; r aliases z; wt aliases w's segment.
  auto t = [&](uint32_t id) { return method->values()->Get(id)->value_as_Tensor(); };
  EXPECT_EQ(t(0)->storage(), fb::StorageKind::Arena);
  EXPECT_EQ(t(0)->offset(), 0u);
  EXPECT_EQ(t(3)->offset(), 64u);
  EXPECT_EQ(t(5)->storage(), fb::StorageKind::Arena);
  EXPECT_EQ(t(5)->offset(), 128u);
  EXPECT_EQ(t(1)->storage(), fb::StorageKind::Constant);
  EXPECT_EQ(t(1)->location(), 0u);
  EXPECT_EQ(t(2)->location(), 1u);
  EXPECT_EQ(t(6)->storage(), fb::StorageKind::Constant);
  EXPECT_EQ(t(6)->location(), 0u);
  EXPECT_EQ(t(6)->offset(), 0u);
  EXPECT_EQ(p.num_segments(), 2u);  // the view made no segment of its own

  // Segment checksums are XXH3 of the weight bytes.
  const auto& w = m.program.methods[0].values[1].data;
  EXPECT_EQ(root->segments()->Get(0)->checksum(), XXH3_64bits(w.data(), w.size()));
  auto seg = p.segment_data(0);
  ASSERT_TRUE(seg.ok());
  EXPECT_EQ(0, std::memcmp(seg->data(), w.data(), w.size()));
}

TEST(Serializer, PageAlignedSegments) {
  Mlp m = mlp();
  SerializeOptions options;
  options.segment_alignment = 4096;
  const auto bytes = serialize_program(m.program, m.plans, options);
  const uint64_t area = u64_at(bytes, 32);
  EXPECT_EQ(area % 4096, 0u);
  auto l = load(bytes);
  ASSERT_TRUE(l->program.ok()) << last_error_message();
  const fb::Program* root = l->program->flatbuffer();
  ASSERT_EQ(root->segments()->size(), 2u);
  EXPECT_EQ(root->segments()->Get(0)->offset(), 0u);
  EXPECT_EQ(root->segments()->Get(1)->offset(), 4096u);
  EXPECT_EQ(root->segments()->Get(1)->alignment(), 4096u);
  EXPECT_EQ(bytes.size(), area + 4096 + 32);

  options.segment_alignment = 100;
  EXPECT_THROW(serialize_program(m.program, m.plans, options), std::invalid_argument);
}

TEST(Serializer, DelegateCallWithFallbackRange) {
  Graph g;
  g.values.push_back(tensor("x", {4}));  // 0
  g.values.push_back(tensor("a", {4}));  // 1
  g.values.push_back(tensor("b", {4}));  // 2
  g.values.push_back(tensor("c", {4}));  // 3
  g.nodes.push_back(Node{"tern::relu", {0}, {1}, "n0"});
  g.nodes.push_back(Node{"tern::neg", {1}, {2}, "n1"});
  g.nodes.push_back(Node{"tern::exp", {2}, {3}, "n2"});
  g.inputs = {0};
  g.outputs = {3};
  DelegateRegion region;
  region.backend = "cpu";
  region.blob = {9, 8, 7};
  region.compile_specs = {{"threads", {4}}};
  region.nodes = {1, 2};
  region.inputs = {1};
  region.outputs = {3};
  g.delegates.push_back(region);
  ProgramGraph program;
  program.methods.push_back(g);
  const std::vector<MemoryPlan> plans = {plan_for(4, {{0, 0}, {1, 64}, {2, 128}, {3, 192}}, 256)};

  auto l = load(serialize_program(program, plans));
  ASSERT_TRUE(l->program.ok()) << last_error_message();
  auto meta = l->program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->num_instructions(), 2u);
  EXPECT_EQ(meta->num_delegates(), 1u);
  const fb::Method* method = meta->flatbuffer();
  ASSERT_NE(method->instructions()->Get(0)->kind_as_KernelCall(), nullptr);
  const fb::DelegateCall* call = method->instructions()->Get(1)->kind_as_DelegateCall();
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->delegate(), 0u);
  ASSERT_EQ(call->args()->size(), 2u);
  EXPECT_EQ(call->args()->Get(0), 1);
  EXPECT_EQ(call->args()->Get(1), 3);
  EXPECT_EQ(call->fallback_begin(), 0u);
  EXPECT_EQ(call->fallback_end(), 2u);
  ASSERT_EQ(method->fallback_instructions()->size(), 2u);
  const fb::KernelCall* f1 = method->fallback_instructions()->Get(1)->kind_as_KernelCall();
  ASSERT_NE(f1, nullptr);
  EXPECT_STREQ(method->operators()->Get(f1->op())->c_str(), "tern::exp");
  EXPECT_EQ(f1->args()->Get(0), 2);
  EXPECT_EQ(f1->args()->Get(1), 3);
  const fb::Delegate* d = method->delegates()->Get(0);
  EXPECT_STREQ(d->backend()->c_str(), "cpu");
  auto blob = l->program->segment_data(d->segment());
  ASSERT_TRUE(blob.ok());
  ASSERT_EQ(blob->size(), 3u);
  EXPECT_EQ(blob->data()[0], 9);
  ASSERT_EQ(d->compile_specs()->size(), 1u);
  EXPECT_STREQ(d->compile_specs()->Get(0)->key()->c_str(), "threads");
  EXPECT_EQ(d->compile_specs()->Get(0)->value()->Get(0), 4);
}

TEST(Serializer, StateTensorsAndCallerBoundInputs) {
  Graph g;
  Value x = tensor("x", {2});
  x.caller_bound = true;
  g.values.push_back(x);  // 0
  Value cache = tensor("cache", {2, 2});
  cache.is_state = true;
  cache.data = std::vector<uint8_t>(16, 0x3f);
  g.values.push_back(cache);  // 1
  Value counter = tensor("counter", {1}, DType::I64);
  counter.is_state = true;
  g.values.push_back(counter);           // 2
  g.values.push_back(tensor("y", {2}));  // 3
  Value empty = tensor("empty", {0, 4});
  g.values.push_back(empty);         // 4
  g.values.push_back(int_value(3));  // 5
  g.nodes.push_back(Node{"tern::add", {0, 1, 5}, {3}, ""});
  g.nodes.push_back(Node{"tern::clone", {0}, {4}, ""});
  g.inputs = {0};
  g.outputs = {3, 4};
  ProgramGraph program;
  program.methods.push_back(g);
  // The empty tensor has no planned offset: it needs none.
  const std::vector<MemoryPlan> plans = {plan_for(6, {{1, 0}, {2, 64}, {3, 128}}, 192)};

  auto l = load(serialize_program(program, plans));
  ASSERT_TRUE(l->program.ok()) << last_error_message();
  auto meta = l->program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  const fb::Method* method = meta->flatbuffer();
  EXPECT_EQ(method->values()->Get(0)->value_as_Tensor()->storage(), fb::StorageKind::Caller);
  ASSERT_EQ(method->state()->size(), 2u);
  EXPECT_EQ(method->state()->Get(0)->value(), 1u);
  const int32_t init = method->state()->Get(0)->init_segment();
  ASSERT_GE(init, 0);
  auto data = l->program->segment_data(static_cast<uint32_t>(init));
  ASSERT_TRUE(data.ok());
  ASSERT_EQ(data->size(), 16u);
  EXPECT_EQ(data->data()[15], 0x3f);
  EXPECT_EQ(method->state()->Get(1)->value(), 2u);
  EXPECT_EQ(method->state()->Get(1)->init_segment(), -1);
  EXPECT_EQ(method->values()->Get(2)->value_as_Tensor()->offset(), 64u);
  auto info = meta->output_tensor_info(1);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->nbytes, 0u);
  EXPECT_EQ(*meta->input_tag(0), EValue::Tag::Tensor);
  EXPECT_EQ(method->values()->Get(5)->value_as_Int()->value(), 3);
}

TEST(Serializer, ScalarsListsAndQuantParams) {
  Graph g;
  Value q = tensor("q", {2, 64}, DType::NF4);
  q.is_constant = true;
  q.data.mutable_vector().assign(64, 0x12);
  q.quant.scheme = QuantSpec::Scheme::NF4;
  q.quant.block_size = 64;
  q.quant.absmax = 1;
  g.values.push_back(q);                              // 0
  g.values.push_back(constant("absmax", {2}, 8, 0));  // 1
  Value dl;
  dl.kind = Value::Kind::DoubleList;
  dl.doubles = {0.5, 1.5};
  g.values.push_back(dl);  // 2
  Value il;
  il.kind = Value::Kind::IntList;
  il.ints = {1, -1};
  g.values.push_back(il);  // 3
  Value s;
  s.kind = Value::Kind::String;
  s.string_value = "tanh";
  g.values.push_back(s);  // 4
  Value none;
  none.kind = Value::Kind::None;
  g.values.push_back(none);              // 5
  g.values.push_back(tensor("x", {2}));  // 6
  Value tl;
  tl.kind = Value::Kind::TensorList;
  tl.tensors = {6, 0};
  g.values.push_back(tl);  // 7
  Value b;
  b.kind = Value::Kind::Bool;
  b.bool_value = true;
  g.values.push_back(b);  // 8
  g.inputs = {6};
  g.outputs = {6};
  ProgramGraph program;
  program.methods.push_back(g);
  auto l = load(serialize_program(program, {plan_for(9, {{6, 0}}, 64)}));
  ASSERT_TRUE(l->program.ok()) << last_error_message();
  const fb::Method* method = l->program->flatbuffer()->methods()->Get(0);
  const fb::QuantParams* qp = method->values()->Get(0)->value_as_Tensor()->quant();
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(qp->scheme(), fb::QuantScheme::NF4);
  EXPECT_EQ(qp->absmax(), 1);
  EXPECT_EQ(method->values()->Get(0)->value_as_Tensor()->dtype(), fb::DType::NF4);
  EXPECT_EQ(method->values()->Get(2)->value_as_DoubleList()->items()->Get(1), 1.5);
  EXPECT_EQ(method->values()->Get(3)->value_as_IntList()->items()->Get(1), -1);
  EXPECT_STREQ(method->values()->Get(4)->value_as_String()->value()->c_str(), "tanh");
  EXPECT_NE(method->values()->Get(5)->value_as_None(), nullptr);
  EXPECT_EQ(method->values()->Get(7)->value_as_TensorList()->items()->Get(1), 0);
  EXPECT_TRUE(method->values()->Get(8)->value_as_Bool()->value());
}

TEST(Serializer, MethodsShareTheSegmentsOfEqualConstants) {
  // Two methods of one model (a prefill and a decode): equal weights are stored once.
  Mlp a = mlp();
  Mlp b = mlp();
  b.program.methods[0].name = "decode";
  b.program.methods[0].values[2].data.mutable_vector()[5] ^= 1;  // decode's bias differs in one byte
  a.program.methods.push_back(b.program.methods[0]);
  a.plans.push_back(b.plans[0]);
  auto l = load(serialize_program(a.program, a.plans));
  ASSERT_TRUE(l->program.ok()) << last_error_message();
  EXPECT_EQ(l->program->num_methods(), 2u);
  EXPECT_EQ(l->program->num_segments(), 3u);  // w once, forward's b, decode's b
  auto fwd = l->program->method_meta("forward");
  auto dec = l->program->method_meta("decode");
  ASSERT_TRUE(fwd.ok());
  ASSERT_TRUE(dec.ok());
  auto location = [](const MethodMeta& m, uint32_t id) {
    return m.flatbuffer()->values()->Get(id)->value_as_Tensor()->location();
  };
  EXPECT_EQ(location(*fwd, 1), 0u);
  EXPECT_EQ(location(*dec, 1), 0u);  // the same w
  EXPECT_EQ(location(*fwd, 2), 1u);
  EXPECT_EQ(location(*dec, 2), 2u);
  // Each method's constants read back as its own bytes.
  for (const auto& [meta, g] : {std::make_pair(&*fwd, &a.program.methods[0]),
                                std::make_pair(&*dec, &a.program.methods[1])}) {
    for (uint32_t id : {1u, 2u}) {
      auto seg = l->program->segment_data(location(*meta, id));
      ASSERT_TRUE(seg.ok());
      const ConstantBytes& want = g->values[id].data;
      ASSERT_EQ(seg->size(), want.size());
      EXPECT_EQ(0, std::memcmp(seg->data(), want.data(), want.size())) << g->name << " " << id;
    }
  }

  a.program.methods[1].name = "forward";
  EXPECT_THROW(serialize_program(a.program, a.plans), std::invalid_argument);
}

TEST(Serializer, EqualConstantsInOneMethodShareASegment) {
  Mlp m = mlp();
  m.program.methods[0].values[2] = constant("b", {8}, 32, 1);  // b's bytes = w's first 32
  EXPECT_EQ(load(serialize_program(m.program, m.plans))->program->num_segments(), 2u);
  Graph& g = m.program.methods[0];
  g.values[2].data.mutable_vector().assign(g.values[1].data.begin(), g.values[1].data.begin() + 32);
  g.values[1].data.mutable_vector().resize(32);  // now w and b hold the same 32 bytes: one segment
  g.values[1].sizes = {8};
  g.values[6].sizes = {8};
  auto l = load(serialize_program(m.program, m.plans));
  ASSERT_TRUE(l->program.ok()) << last_error_message();
  EXPECT_EQ(l->program->num_segments(), 1u);
}

TEST(Serializer, RejectsInconsistentInput) {
  Mlp m = mlp();
  EXPECT_THROW(serialize_program(m.program, {}), std::invalid_argument);  // plan count
  Mlp bad = mlp();
  bad.program.methods[0].values[1].data.mutable_vector().resize(10);  // wrong constant size
  EXPECT_THROW(serialize_program(bad.program, bad.plans), std::invalid_argument);
  bad = mlp();
  bad.plans[0].offsets[3] = -1;  // a planned tensor without an offset
  EXPECT_THROW(serialize_program(bad.program, bad.plans), std::invalid_argument);
  bad = mlp();
  bad.plans[0].offsets[4] = 180;  // beyond the arena
  EXPECT_THROW(serialize_program(bad.program, bad.plans), std::invalid_argument);
  bad = mlp();
  bad.program.methods[0].nodes[0].args[0] = 99;
  EXPECT_THROW(serialize_program(bad.program, bad.plans), std::invalid_argument);
  bad = mlp();
  bad.program.methods[0].values[3].caller_bound = true;  // not an input
  EXPECT_THROW(serialize_program(bad.program, bad.plans), std::invalid_argument);
}

TEST(Serializer, BuilderAndPlannerOutputVerifies) {
  // The whole compiler path: GraphBuilder -> plan_memory -> serialize -> Program::load.
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 8});
  const int w = b.constant_f32("w", {8, 8}, std::vector<float>(64, 0.5f));
  const int cache = b.state("cache", DType::F32, {2, 8}, std::vector<uint8_t>(64, 0));
  const int h = b.op("tern::matmul", {x, w}, DType::F32, {2, 8}, "fc");
  const int r = b.op("tern::reshape", {h, b.int_list({16})}, DType::F32, {16}, "flat");
  const int e = b.op("tern::exp", {r}, DType::F32, {16}, "exp");
  b.op_into("tern::copy_", {h}, {cache}, "store");
  b.output(e);
  b.delegate("cpu", 2, 2, {1, 2, 3});
  ProgramGraph program;
  program.methods.push_back(b.build());
  const std::vector<MemoryPlan> plans = {plan_memory(program.methods[0])};
  for (uint32_t alignment : {64u, 4096u}) {
    SerializeOptions options;
    options.segment_alignment = alignment;
    auto l = load(serialize_program(program, plans, options));
    ASSERT_TRUE(l->program.ok()) << last_error_message();
    auto meta = l->program->method_meta("forward");
    ASSERT_TRUE(meta.ok());
    EXPECT_EQ(meta->num_delegates(), 1u);
    EXPECT_EQ(*meta->arena_size(0), plans[0].arena_size);
    auto out = meta->output_tensor_info(0);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(out->nbytes, 64u);
    ASSERT_EQ(meta->flatbuffer()->state()->size(), 1u);
    EXPECT_EQ(meta->flatbuffer()->state()->Get(0)->value(), static_cast<uint32_t>(cache));
  }
}

TEST(Serializer, OffsetAliasesRoundTrip) {
  // Pieces placed by the planner at an offset into their root: a slice of an intermediate
  // (in the arena: root offset + 16 bytes), a select of a constant (its segment + 24 bytes),
  // and a split whose second piece starts 8 bytes in. Hand-worked: x f32[1, 6, 2];
  // xs = x[:, 2:5] starts 2 x 2 = 4 elements in; w f32[4, 3] row 2 starts 6 elements in;
  // split([1, 5], dim 1) of x: piece 1 starts 1 x 2 = 2 elements in.
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {1, 6, 2});
  std::vector<float> wv(12);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(i) * 0.5f;
  const int w = b.constant_f32("w", {4, 3}, wv);
  const int h = b.op("tern::relu", {x}, DType::F32, {1, 6, 2});
  const int one = b.int_value(1);
  const int xs = b.op("tern::slice", {h, one, b.int_value(2), b.int_value(5), one}, DType::F32,
                      {1, 3, 2}, "piece");
  const int ws = b.op("tern::select", {w, b.int_value(0), b.int_value(2)}, DType::F32, {3}, "row");
  const int p0 = b.tensor("p0", DType::F32, {1, 1, 2});
  const int p1 = b.tensor("p1", DType::F32, {1, 5, 2});
  b.op_into("tern::split", {h, b.int_list({1, 5}), one}, {p0, p1}, "halves");
  for (int v : {xs, ws, p1}) b.output(v);
  ProgramGraph program;
  program.methods.push_back(b.build());
  const std::vector<MemoryPlan> plans = {plan_memory(program.methods[0])};
  const MemoryPlan& plan = plans[0];
  ASSERT_EQ(plan.alias_of[xs], h);
  ASSERT_EQ(plan.alias_offset[xs], 16u);
  ASSERT_EQ(plan.alias_of[ws], w);
  ASSERT_EQ(plan.alias_offset[ws], 24u);
  ASSERT_EQ(plan.alias_offset[p1], 8u);

  auto l = load(serialize_program(program, plans));
  ASSERT_TRUE(l->program.ok()) << last_error_message();  // the verifier accepts the offsets
  auto meta = l->program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  const fb::Method* method = meta->flatbuffer();
  auto t = [&](int id) { return method->values()->Get(static_cast<uint32_t>(id))->value_as_Tensor(); };
  const uint64_t h_offset = static_cast<uint64_t>(plan.offsets[h]);
  EXPECT_EQ(t(h)->storage(), fb::StorageKind::Arena);
  EXPECT_EQ(t(xs)->storage(), fb::StorageKind::Arena);
  EXPECT_EQ(t(xs)->offset(), h_offset + 16);
  EXPECT_EQ(t(p0)->offset(), h_offset);
  EXPECT_EQ(t(p1)->offset(), h_offset + 8);
  EXPECT_EQ(t(w)->storage(), fb::StorageKind::Constant);
  EXPECT_EQ(t(ws)->storage(), fb::StorageKind::Constant);
  EXPECT_EQ(t(ws)->location(), t(w)->location());
  EXPECT_EQ(t(w)->offset(), 0u);
  EXPECT_EQ(t(ws)->offset(), 24u);
  EXPECT_EQ(l->program->num_segments(), 1u);  // the piece shares w's segment
  // The bytes at that offset are w's row 2.
  auto seg = l->program->segment_data(t(ws)->location());
  ASSERT_TRUE(seg.ok());
  float row[3];
  std::memcpy(row, seg->data() + t(ws)->offset(), sizeof(row));
  EXPECT_EQ(row[0], 3.0f);
  EXPECT_EQ(row[1], 3.5f);
  EXPECT_EQ(row[2], 4.0f);

  // A plan whose alias reaches past its root, or whose offset list has the wrong length, is
  // rejected.
  std::vector<MemoryPlan> bad = plans;
  bad[0].alias_offset[ws] = 40;  // 40 + 12 > 48 bytes of w
  EXPECT_THROW(serialize_program(program, bad), std::invalid_argument);
  bad = plans;
  bad[0].alias_offset[xs] = 40;  // 40 + 24 > 48 bytes of h
  EXPECT_THROW(serialize_program(program, bad), std::invalid_argument);
  bad = plans;
  bad[0].alias_offset.resize(3);
  EXPECT_THROW(serialize_program(program, bad), std::invalid_argument);
}

TEST(Serializer, WriteFileReportsThePath) {
  const std::vector<uint8_t> bytes = {1, 2, 3};
  try {
    write_file("/nonexistent/dir/out.pte", bytes);
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/out.pte"), std::string::npos);
  }
}

// ---------------------------------------------------------------- write_pte: the file layer

/// Reads the FlatBuffer of a write_pte file back (through the FlatBuffers verifier only).
const fb::Program* flatbuffer_of(const std::vector<uint8_t>& bytes) {
  const uint8_t* fb_bytes = bytes.data() + 64;
  flatbuffers::Verifier verifier(fb_bytes, static_cast<size_t>(u64_at(bytes, 24)));
  return fb::VerifyProgramBuffer(verifier) ? fb::GetProgram(fb_bytes) : nullptr;
}

TEST(Serializer, WritePteWritesEveryFieldAsGiven) {
  // Values no checker would let through (indices out of range, unknown enumerations) and
  // every field away from its default.
  pte::File file;
  file.major = 7;
  file.minor = 3;
  file.version = 1234;
  file.producer = "p";
  file.source_model = "s";
  file.metadata = {pte::KeyValue{"k", "v"}, pte::KeyValue{std::nullopt, "no key"}};
  pte::Method m;
  m.name = "m";
  pte::Value t;
  t.tensor.dtype = 200;
  t.tensor.sizes = {-1, 3};
  t.tensor.dim_order = std::vector<uint8_t>{1, 0, 9};
  t.tensor.storage = 9;
  t.tensor.location = 77;
  t.tensor.offset = 1ull << 40;
  t.tensor.dynamism = 1;
  t.tensor.name = "t";
  pte::Quant q;
  q.scheme = 2;
  q.block_size = 3;
  q.absmax = 4;
  q.dq_codes = 5;
  q.dq_absmax2 = 6;
  q.dq_table = 7;
  q.dq_offset = 0.25f;
  q.dq_block_size = 8;
  q.scale = 9;
  q.granularity = 2;
  q.block_rows = 10;
  q.block_cols = 11;
  t.tensor.quant = q;
  m.values.push_back(t);
  pte::Value v;
  v.type = fb::Value::Double;
  v.double_value = 2.5;
  m.values.push_back(v);
  v.type = fb::Value::Bool;
  v.bool_value = true;
  m.values.push_back(v);
  v.type = fb::Value::IntList;
  v.ints = {1, -2};
  m.values.push_back(v);
  v.type = fb::Value::DoubleList;
  v.doubles = {0.5};
  m.values.push_back(v);
  v.type = fb::Value::String;
  v.string_value = "str";
  m.values.push_back(v);
  v.type = fb::Value::TensorList;
  v.items = {99};
  m.values.push_back(v);
  v.type = fb::Value::Int;
  v.omit_payload = true;
  m.values.push_back(v);
  m.inputs = {5};
  m.outputs = {6, 7};
  m.operators = {"op"};
  pte::Instruction call;
  call.kind = fb::InstructionKind::DelegateCall;
  call.index = 3;
  call.args = {-1};
  call.fallback_begin = 2;
  call.fallback_end = 1;
  call.debug_name = "d";
  m.instructions = {call};
  pte::Instruction kernel;
  kernel.index = 4;
  m.fallback = {kernel};
  m.delegates = {pte::Delegate{"b", 12, {pte::CompileSpec{"key", {1, 2}}}}};
  m.arenas = {pte::Arena{10, 48, 20}};
  m.state = {pte::StateTensor{3, 5}};
  m.temp_size = 99;
  file.methods = {m, pte::Method{}};
  file.segments = {pte::Segment{8, 4, 24, 0xabc}};

  const std::vector<uint8_t> bytes = write_pte(file);
  EXPECT_EQ(bytes[8] | bytes[9] << 8, 7);
  EXPECT_EQ(bytes[10] | bytes[11] << 8, 3);
  const fb::Program* root = flatbuffer_of(bytes);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->version(), 1234u);
  EXPECT_STREQ(root->producer()->c_str(), "p");
  EXPECT_STREQ(root->source_model()->c_str(), "s");
  ASSERT_EQ(root->metadata()->size(), 2u);
  EXPECT_STREQ(root->metadata()->Get(0)->key()->c_str(), "k");
  EXPECT_EQ(root->metadata()->Get(1)->key(), nullptr);
  EXPECT_STREQ(root->metadata()->Get(1)->value()->c_str(), "no key");
  ASSERT_EQ(root->segments()->size(), 1u);
  const fb::Segment* seg = root->segments()->Get(0);
  EXPECT_EQ(seg->offset(), 8u);
  EXPECT_EQ(seg->size(), 4u);
  EXPECT_EQ(seg->alignment(), 24u);
  EXPECT_EQ(seg->checksum(), 0xabcu);
  ASSERT_EQ(root->methods()->size(), 2u);
  EXPECT_EQ(root->methods()->Get(1)->name(), nullptr);

  const fb::Method* method = root->methods()->Get(0);
  EXPECT_STREQ(method->name()->c_str(), "m");
  ASSERT_EQ(method->values()->size(), 8u);
  const fb::Tensor* tensor = method->values()->Get(0)->value_as_Tensor();
  ASSERT_NE(tensor, nullptr);
  EXPECT_EQ(static_cast<int>(tensor->dtype()), 200);
  EXPECT_EQ(std::vector<int64_t>(tensor->sizes()->begin(), tensor->sizes()->end()),
            (std::vector<int64_t>{-1, 3}));
  EXPECT_EQ(std::vector<uint8_t>(tensor->dim_order()->begin(), tensor->dim_order()->end()),
            (std::vector<uint8_t>{1, 0, 9}));
  EXPECT_EQ(static_cast<int>(tensor->storage()), 9);
  EXPECT_EQ(tensor->location(), 77u);
  EXPECT_EQ(tensor->offset(), 1ull << 40);
  EXPECT_EQ(tensor->dynamism(), fb::ShapeDynamism::DynamicBound);
  EXPECT_STREQ(tensor->name()->c_str(), "t");
  const fb::QuantParams* qp = tensor->quant();
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(qp->scheme(), fb::QuantScheme::NF4DoubleQuant);
  EXPECT_EQ(qp->block_size(), 3u);
  EXPECT_EQ(qp->absmax(), 4);
  EXPECT_EQ(qp->dq_codes(), 5);
  EXPECT_EQ(qp->dq_absmax2(), 6);
  EXPECT_EQ(qp->dq_table(), 7);
  EXPECT_EQ(qp->dq_offset(), 0.25f);
  EXPECT_EQ(qp->dq_block_size(), 8u);
  EXPECT_EQ(qp->scale(), 9);
  EXPECT_EQ(qp->granularity(), fb::ScaleGranularity::Block2D);
  EXPECT_EQ(qp->block_rows(), 10u);
  EXPECT_EQ(qp->block_cols(), 11u);
  EXPECT_EQ(method->values()->Get(1)->value_as_Double()->value(), 2.5);
  EXPECT_TRUE(method->values()->Get(2)->value_as_Bool()->value());
  EXPECT_EQ(method->values()->Get(3)->value_as_IntList()->items()->Get(1), -2);
  EXPECT_EQ(method->values()->Get(4)->value_as_DoubleList()->items()->Get(0), 0.5);
  EXPECT_STREQ(method->values()->Get(5)->value_as_String()->value()->c_str(), "str");
  EXPECT_EQ(method->values()->Get(6)->value_as_TensorList()->items()->Get(0), 99);
  EXPECT_EQ(method->values()->Get(7)->value_type(), fb::Value::Int);
  EXPECT_EQ(method->values()->Get(7)->value(), nullptr);
  EXPECT_EQ(method->inputs()->Get(0), 5u);
  EXPECT_EQ(method->outputs()->Get(1), 7u);
  EXPECT_STREQ(method->operators()->Get(0)->c_str(), "op");
  const fb::DelegateCall* dc = method->instructions()->Get(0)->kind_as_DelegateCall();
  ASSERT_NE(dc, nullptr);
  EXPECT_EQ(dc->delegate(), 3u);
  EXPECT_EQ(dc->args()->Get(0), -1);
  EXPECT_EQ(dc->fallback_begin(), 2u);
  EXPECT_EQ(dc->fallback_end(), 1u);
  EXPECT_STREQ(method->instructions()->Get(0)->debug_name()->c_str(), "d");
  EXPECT_EQ(method->fallback_instructions()->Get(0)->kind_as_KernelCall()->op(), 4u);
  EXPECT_EQ(method->fallback_instructions()->Get(0)->debug_name(), nullptr);
  const fb::Delegate* d = method->delegates()->Get(0);
  EXPECT_STREQ(d->backend()->c_str(), "b");
  EXPECT_EQ(d->segment(), 12u);
  EXPECT_STREQ(d->compile_specs()->Get(0)->key()->c_str(), "key");
  EXPECT_EQ(d->compile_specs()->Get(0)->value()->Get(1), 2);
  EXPECT_EQ(method->arenas()->Get(0)->size(), 10u);
  EXPECT_EQ(method->arenas()->Get(0)->alignment(), 48u);
  EXPECT_EQ(method->arenas()->Get(0)->lower_bound(), 20u);
  EXPECT_EQ(method->state()->Get(0)->value(), 3u);
  EXPECT_EQ(method->state()->Get(0)->init_segment(), 5);
  EXPECT_EQ(method->temp_size(), 99u);
}

TEST(Serializer, WritePteLaysOutTheAreaAndChecksumsIt) {
  std::vector<uint8_t> a(16), b(8);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i + 1);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(0xf0 + i);
  pte::File file;
  file.methods.emplace_back();
  file.area_alignment = 100;  // need not be a power of two
  file.area_size = 30;
  // b over the middle of a; a piece reaching past the area is cut there.
  file.area_contents = {pte::AreaBytes{0, Span<const uint8_t>(a.data(), a.size())},
                        pte::AreaBytes{4, Span<const uint8_t>(b.data(), b.size())},
                        pte::AreaBytes{24, Span<const uint8_t>(a.data(), a.size())}};
  file.segments = {pte::Segment{0, 4, 64, std::nullopt},    // inside a only
                   pte::Segment{2, 12, 64, std::nullopt},   // a, b over a, a
                   pte::Segment{16, 10, 64, std::nullopt},  // zeros, then a's start
                   pte::Segment{20, 11, 64, std::nullopt},  // past the area: 0
                   pte::Segment{0, 4, 64, 42u}};            // as given
  const std::vector<uint8_t> bytes = write_pte(file);

  const uint64_t area = u64_at(bytes, 32);
  EXPECT_EQ(area % 100, 0u);
  EXPECT_GE(area, 64 + u64_at(bytes, 24));
  EXPECT_LT(area, 64 + u64_at(bytes, 24) + 100);
  EXPECT_EQ(u64_at(bytes, 40), 30u);
  ASSERT_EQ(bytes.size(), area + 30);
  std::vector<uint8_t> expected(30, 0);
  std::memcpy(expected.data(), a.data(), 16);
  std::memcpy(expected.data() + 4, b.data(), 8);
  std::memcpy(expected.data() + 24, a.data(), 6);
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + static_cast<long>(area), bytes.end()), expected);
  // The header checksum, computed independently.
  std::vector<uint8_t> hashed(bytes.begin(),
                              bytes.begin() + static_cast<long>(64 + u64_at(bytes, 24)));
  std::memset(hashed.data() + 48, 0, 8);
  EXPECT_EQ(u64_at(bytes, 48), XXH3_64bits(hashed.data(), hashed.size()));

  const fb::Program* root = flatbuffer_of(bytes);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->version(), kFormatVersionMajor * 1000u + kFormatVersionMinor);
  const auto checksum = [&](size_t i) {
    return root->segments()->Get(static_cast<unsigned>(i))->checksum();
  };
  EXPECT_EQ(checksum(0), XXH3_64bits(expected.data(), 4));
  EXPECT_EQ(checksum(1), XXH3_64bits(expected.data() + 2, 12));
  EXPECT_EQ(checksum(2), XXH3_64bits(expected.data() + 16, 10));
  EXPECT_EQ(checksum(3), 0u);
  EXPECT_EQ(checksum(4), 42u);
}

}  // namespace
}  // namespace tern::compiler

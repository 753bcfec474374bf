// Compiled time loops of the custom recurrent cells (CPU, float32/float64).
//
// At the Dyck size (batch 10, hidden 12-24) a step of these cells is a few thousand
// multiply-adds, far less than the cost of one torch call; run step by step from Python they
// are dispatch-bound. Here each recurrence is one call per direction: plain loops over the
// batch, the (transposed) recurrent weights and the gate math. Input projections and weight
// gradients stay matmuls over all steps in Python (rnnrepro.models.native, and the model
// modules, whose Python loops are the fallback and the test oracle).
//
// Layouts follow the Python functions they replace (time-major, contiguous):
//   mixed_lstm      MixedLSTMFunction       (attention_lstm.py; gates gate-major o, i, f, g,
//                                            then cell, then unit)
//   multiplicative  MultiplicativeRecurrence (multiplicative.py; gates i, f, o, g)
//   multi_matrix    MultiMatrixRecurrence    (multi_matrix.py; groups i, f, o, g)
//   tanh_rnn        TanhRecurrence           (rnn.py)
//   dyck_stack      DyckRNN's stack update   (dyck_rnn.py)
// Every loop runs in a fixed order: results are deterministic.

#include <torch/extension.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using torch::Tensor;

// ---- activations -------------------------------------------------------------------------
// float: branch-free exp, tanh and sigmoid the compiler vectorises (Cephes' expf and tanhf
// polynomials, ~2 ulp; NaN propagates); std::exp/std::tanh would cost one scalar libm call
// per gate and unit, the bulk of a step at the Dyck size. double (tests): libm.

template <typename T>
inline T exp_(T x) {
  return std::exp(x);
}

template <>
inline float exp_<float>(float x) {
  x = x < -87.33654f ? -87.33654f : x;  // ternaries, not std::max: NaN stays NaN
  x = x > 88.72283f ? 88.72283f : x;
  const float fn = std::floor(x * 1.44269504088896341f + 0.5f);
  const float r = x - fn * 0.693359375f - fn * -2.12194440e-4f;
  const float r2 = r * r;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r2 + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(fn) + 127) << 23;  // 2^fn, fn in [-126, 128]
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

template <typename T>
inline T tanh_(T x) {
  return std::tanh(x);
}

template <>
inline float tanh_<float>(float x) {
  const float a = x < 0.0f ? -x : x;
  const float z = x * x;  // |x| < 0.625: odd polynomial
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  const float e = 1.0f - 2.0f / (exp_(2.0f * a) + 1.0f);
  const float big = x < 0.0f ? -e : e;
  return a < 0.625f ? small : big;
}

template <typename T>
inline T sigmoid(T x) {
  return T(1) / (T(1) + exp_(-x));
}

template <typename T>
inline void sigmoid_inplace(int64_t n, T* __restrict__ x) {
  for (int64_t i = 0; i < n; ++i) x[i] = sigmoid(x[i]);
}

template <typename T>
inline void tanh_inplace(int64_t n, T* __restrict__ x) {
  for (int64_t i = 0; i < n; ++i) x[i] = tanh_(x[i]);
}

// y[0:n] += a * x[0:n]
template <typename T>
inline void axpy(int64_t n, T a, const T* x, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

// sum_i x[i] y[i], with 8 independent partial sums (vectorisable without reassociation)
template <typename T>
inline T dot(int64_t n, const T* x, const T* y) {
  T acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += x[i + j] * y[i + j];
  T s = 0;
  for (; i < n; ++i) s += x[i] * y[i];
  for (int j = 0; j < 8; ++j) s += acc[j];
  return s;
}

// sum_i x[i], with 8 partial sums like ``dot``
template <typename T>
inline T sum(int64_t n, const T* x) {
  T acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += x[i + j];
  T s = 0;
  for (; i < n; ++i) s += x[i];
  for (int j = 0; j < 8; ++j) s += acc[j];
  return s;
}

// y[0:R] += W x for W stored transposed, wt [K, R] (row k = column k of W)
template <typename T>
inline void gemv_t(int64_t K, int64_t R, const T* wt, const T* x, T* y) {
  for (int64_t k = 0; k < K; ++k) axpy(R, x[k], wt + k * R, y);
}

// y[0:K] (=, not +=) W^T g for W stored transposed, wt [K, R]
template <typename T>
inline void gemv_back(int64_t K, int64_t R, const T* wt, const T* g, T* y) {
  for (int64_t k = 0; k < K; ++k) y[k] = dot(R, wt + k * R, g);
}

// From this batch size on, a step's product with the stacked matrices is one BLAS call over the
// batch (at::mm) instead of a loop of matrix-vector products: at batch 128 the call's fixed cost
// is small against the work, at batch 10 it is not.
constexpr int64_t GEMM_MIN_BATCH = 32;

void check(const Tensor& t, const char* name) {
  TORCH_CHECK(t.device().is_cpu(), name, " must be a CPU tensor");
  TORCH_CHECK(t.is_contiguous(), name, " must be contiguous");
}

// ------------------------------------------------------------------------------------------
// LSTM cell math shared by the LSTM variants (gate pre-activations already summed).

// gates [4n] (pre-activations i, f, o, g) activated in place; the new c, h from c_prev.
template <typename T>
inline void lstm_forward(int64_t n, T* __restrict__ gates, const T* __restrict__ c_prev,
                         T* __restrict__ c, T* __restrict__ h) {
  sigmoid_inplace(3 * n, gates);
  tanh_inplace(n, gates + 3 * n);
  const T *i = gates, *f = gates + n, *o = gates + 2 * n, *g = gates + 3 * n;
  for (int64_t u = 0; u < n; ++u) {
    c[u] = f[u] * c_prev[u] + i[u] * g[u];
    h[u] = o[u] * tanh_(c[u]);
  }
}

// From dh, dc (w.r.t. h_t, c_t) and the activated gates (i, f, o, g): the gradients of the
// pre-activations, d_gates [4n], and of c_prev.
template <typename T>
inline void lstm_backward(int64_t n, const T* __restrict__ gates, const T* __restrict__ c_prev,
                          const T* __restrict__ c, const T* __restrict__ dh,
                          const T* __restrict__ dc, T* __restrict__ d_gates,
                          T* __restrict__ dc_prev) {
  const T *i = gates, *f = gates + n, *o = gates + 2 * n, *g = gates + 3 * n;
  T *di = d_gates, *df = d_gates + n, *d_o = d_gates + 2 * n, *dg = d_gates + 3 * n;
  for (int64_t u = 0; u < n; ++u) {
    const T tc = tanh_(c[u]);
    const T dct = dc[u] + dh[u] * o[u] * (T(1) - tc * tc);
    di[u] = dct * g[u] * i[u] * (T(1) - i[u]);
    df[u] = dct * c_prev[u] * f[u] * (T(1) - f[u]);
    d_o[u] = dh[u] * tc * o[u] * (T(1) - o[u]);
    dg[u] = dct * i[u] * (T(1) - g[u] * g[u]);
    dc_prev[u] = dct * f[u];
  }
}

// ------------------------------------------------------------------------------------------
// Mixed LSTM (second_order_lstm): S cells on the shared state (h, c), mixed by alpha each step.
//   xw [T, B, 4Sh] (gate-major o, i, f, g; then cell; then unit), alpha [T, B, S],
//   w_t [h, 4Sh] (weight_hh transposed), h0, c0 [B, h], mask [T, B, h] or empty (dropout on g)
// Returns hs [T, B, h], cs [T, B, h] (mixed states), acts [T, B, 4Sh] (activated gates, g
// masked), cell_c [T, B, S, h] (each cell's new c).

// One cell's update from its activated gates, added into the mixed state with weight a.
template <typename T>
inline void mixed_cell_forward(int64_t h, T a, const T* __restrict__ o, const T* __restrict__ i,
                               const T* __restrict__ f, const T* __restrict__ g,
                               const T* __restrict__ c_prev, T* __restrict__ c_s,
                               T* __restrict__ h_new, T* __restrict__ c_new) {
  for (int64_t u = 0; u < h; ++u) {
    c_s[u] = f[u] * c_prev[u] + i[u] * g[u];
    h_new[u] += a * (o[u] * tanh_(c_s[u]));
    c_new[u] += a * c_s[u];
  }
}

// One cell's backward: its gate gradients, its share of dc_prev (added) and of d alpha
// (returned; per unit in ``terms`` first, so that the loop has no reduction and vectorises).
template <typename T>
inline T mixed_cell_backward(int64_t h, T a, const T* __restrict__ o, const T* __restrict__ i,
                             const T* __restrict__ f, const T* __restrict__ g,
                             const T* __restrict__ m, const T* __restrict__ c_prev,
                             const T* __restrict__ c_s, const T* __restrict__ dh,
                             const T* __restrict__ dc, T* __restrict__ d_o,
                             T* __restrict__ d_i, T* __restrict__ d_f, T* __restrict__ d_g,
                             T* __restrict__ dc_prev, T* __restrict__ terms) {
  for (int64_t u = 0; u < h; ++u) {
    const T tc = tanh_(c_s[u]);
    terms[u] = o[u] * tc * dh[u] + c_s[u] * dc[u];
    const T dh_s = a * dh[u];
    const T dc_s = a * dc[u] + dh_s * o[u] * (T(1) - tc * tc);
    d_o[u] = dh_s * tc * o[u] * (T(1) - o[u]);
    d_i[u] = dc_s * g[u] * i[u] * (T(1) - i[u]);
    d_f[u] = dc_s * c_prev[u] * f[u] * (T(1) - f[u]);
    // with a dropout mask g holds m tanh(pre), whose slope is m (1 - tanh^2) = m - g^2 / m
    const T slope = m ? (m[u] > 0 ? m[u] - g[u] * g[u] / m[u] : T(0)) : T(1) - g[u] * g[u];
    d_g[u] = dc_s * i[u] * slope;
    dc_prev[u] += dc_s * f[u];
  }
  return sum(h, terms);
}

template <typename T>
void mixed_lstm_forward_impl(const Tensor& xw, const Tensor& alpha, const Tensor& w_t,
                             const Tensor& h0, const Tensor& c0, const Tensor& mask, Tensor& hs,
                             Tensor& cs, Tensor& acts, Tensor& cell_c) {
  const int64_t TT = xw.size(0), B = xw.size(1), h = w_t.size(0), R = w_t.size(1);
  const int64_t S = alpha.size(2), Sh = S * h;
  const T* X = xw.data_ptr<T>();
  const T* A = alpha.data_ptr<T>();
  const T* W = w_t.data_ptr<T>();
  const T* M = mask.numel() ? mask.data_ptr<T>() : nullptr;
  T* H = hs.data_ptr<T>();
  T* C = cs.data_ptr<T>();
  T* G = acts.data_ptr<T>();
  T* CC = cell_c.data_ptr<T>();
  for (int64_t t = 0; t < TT; ++t) {
    for (int64_t b = 0; b < B; ++b) {
      const int64_t tb = t * B + b;
      const T* h_prev = t ? H + (tb - B) * h : h0.data_ptr<T>() + b * h;
      const T* c_prev = t ? C + (tb - B) * h : c0.data_ptr<T>() + b * h;
      T* gates = G + tb * R;
      for (int64_t r = 0; r < R; ++r) gates[r] = X[tb * R + r];
      gemv_t(h, R, W, h_prev, gates);
      T* h_new = H + tb * h;
      T* c_new = C + tb * h;
      for (int64_t u = 0; u < h; ++u) h_new[u] = c_new[u] = 0;
      sigmoid_inplace(3 * Sh, gates);  // o, i, f of every cell
      tanh_inplace(Sh, gates + 3 * Sh);  // g
      if (M) {
        for (int64_t s = 0; s < S; ++s)
          for (int64_t u = 0; u < h; ++u) gates[3 * Sh + s * h + u] *= M[tb * h + u];
      }
      for (int64_t s = 0; s < S; ++s) {
        const T* o = gates + s * h;
        mixed_cell_forward(h, A[tb * S + s], o, o + Sh, o + 2 * Sh, o + 3 * Sh, c_prev,
                           CC + (tb * S + s) * h, h_new, c_new);
      }
    }
  }
}

std::vector<Tensor> mixed_lstm_forward(Tensor xw, Tensor alpha, Tensor w_t, Tensor h0, Tensor c0,
                                       Tensor mask) {
  for (auto* t : {&xw, &alpha, &w_t, &h0, &c0}) check(*t, "mixed_lstm_forward input");
  const int64_t TT = xw.size(0), B = xw.size(1), h = w_t.size(0), S = alpha.size(2);
  auto hs = xw.new_empty({TT, B, h});
  auto cs = xw.new_empty({TT, B, h});
  auto acts = xw.new_empty({TT, B, w_t.size(1)});
  auto cell_c = xw.new_empty({TT, B, S, h});
  AT_DISPATCH_FLOATING_TYPES(xw.scalar_type(), "mixed_lstm_forward", [&] {
    mixed_lstm_forward_impl<scalar_t>(xw, alpha, w_t, h0, c0, mask, hs, cs, acts, cell_c);
  });
  return {hs, cs, acts, cell_c};
}

// Backward: d_hs [T, B, h] (dL/dh_t from the outputs), d_c_last [B, h]; returns d_xw
// [T, B, 4Sh], d_alpha [T, B, S], d_h0, d_c0.
template <typename T>
void mixed_lstm_backward_impl(const Tensor& d_hs, const Tensor& d_c_last, const Tensor& alpha,
                              const Tensor& w_t, const Tensor& c0, const Tensor& hs,
                              const Tensor& cs, const Tensor& acts, const Tensor& cell_c,
                              const Tensor& mask, Tensor& d_xw, Tensor& d_alpha, Tensor& d_h0,
                              Tensor& d_c0) {
  const int64_t TT = d_hs.size(0), B = d_hs.size(1), h = w_t.size(0), R = w_t.size(1);
  const int64_t S = alpha.size(2), Sh = S * h;
  const T* DH = d_hs.data_ptr<T>();
  const T* A = alpha.data_ptr<T>();
  const T* W = w_t.data_ptr<T>();
  const T* C = cs.data_ptr<T>();
  const T* G = acts.data_ptr<T>();
  const T* CC = cell_c.data_ptr<T>();
  const T* M = mask.numel() ? mask.data_ptr<T>() : nullptr;
  T* DX = d_xw.data_ptr<T>();
  T* DA = d_alpha.data_ptr<T>();
  // dh, dc: gradients w.r.t. the state after the current step (recurrent parts)
  std::vector<T> dh_rec(B * h, T(0)), dc(d_c_last.data_ptr<T>(), d_c_last.data_ptr<T>() + B * h);
  std::vector<T> dh(h), dc_prev(h), terms(h);
  for (int64_t t = TT - 1; t >= 0; --t) {
    for (int64_t b = 0; b < B; ++b) {
      const int64_t tb = t * B + b;
      const T* c_prev = t ? C + (tb - B) * h : c0.data_ptr<T>() + b * h;
      const T* gates = G + tb * R;
      T* dgates = DX + tb * R;
      T* dcb = dc.data() + b * h;
      for (int64_t u = 0; u < h; ++u) {
        dh[u] = DH[tb * h + u] + dh_rec[b * h + u];
        dc_prev[u] = 0;
      }
      const T* m = M ? M + tb * h : nullptr;
      for (int64_t s = 0; s < S; ++s) {
        const T* o = gates + s * h;
        T* d_o = dgates + s * h;
        DA[tb * S + s] = mixed_cell_backward(
            h, A[tb * S + s], o, o + Sh, o + 2 * Sh, o + 3 * Sh, m, c_prev,
            CC + (tb * S + s) * h, dh.data(), dcb, d_o, d_o + Sh, d_o + 2 * Sh, d_o + 3 * Sh,
            dc_prev.data(), terms.data());
      }
      gemv_back(h, R, W, dgates, dh_rec.data() + b * h);
      for (int64_t u = 0; u < h; ++u) dcb[u] = dc_prev[u];
    }
  }
  std::copy(dh_rec.begin(), dh_rec.end(), d_h0.data_ptr<T>());
  std::copy(dc.begin(), dc.end(), d_c0.data_ptr<T>());
}

std::vector<Tensor> mixed_lstm_backward(Tensor d_hs, Tensor d_c_last, Tensor alpha, Tensor w_t,
                                        Tensor c0, Tensor hs, Tensor cs, Tensor acts,
                                        Tensor cell_c, Tensor mask) {
  for (auto* t : {&d_hs, &d_c_last, &alpha, &w_t, &c0, &hs, &cs, &acts, &cell_c})
    check(*t, "mixed_lstm_backward input");
  auto d_xw = torch::empty_like(acts);
  auto d_alpha = torch::empty_like(alpha);
  auto d_h0 = torch::empty_like(c0);
  auto d_c0 = torch::empty_like(c0);
  AT_DISPATCH_FLOATING_TYPES(d_hs.scalar_type(), "mixed_lstm_backward", [&] {
    mixed_lstm_backward_impl<scalar_t>(d_hs, d_c_last, alpha, w_t, c0, hs, cs, acts, cell_c,
                                       mask, d_xw, d_alpha, d_h0, d_c0);
  });
  return {d_xw, d_alpha, d_h0, d_c0};
}

// ------------------------------------------------------------------------------------------
// Multiplicative RNN/LSTM (multi_matrix): pre_t = x_pre_t + W_hm (x_m_t * h_{t-1}).
//   x_pre [T, B, Gn] (G = 1: tanh RNN; G = 4: LSTM gates i, f, o, g), x_m [T, B, n] or empty
//   (then m = h_{t-1}: the plain tanh RNN), w_t [n, Gn] (W_hm transposed), h0 [B, n],
//   c0 [B, n] or empty (RNN).
// Returns hs [T+1, B, n] (h0 first), cs [T+1, B, n] (LSTM; c0 first), acts [T, B, Gn]
// (activated gates; the RNN keeps none), ms [T, B, n] (m_t; empty without x_m).

template <typename T>
void multiplicative_forward_impl(const Tensor& x_pre, const Tensor& x_m, const Tensor& w_t,
                                 const Tensor& h0, const Tensor& c0, Tensor& hs, Tensor& cs,
                                 Tensor& acts, Tensor& ms) {
  const int64_t TT = x_pre.size(0), B = x_pre.size(1), n = w_t.size(0), R = w_t.size(1);
  const bool lstm = c0.numel() > 0, mult = x_m.numel() > 0;
  const T* X = x_pre.data_ptr<T>();
  const T* XM = mult ? x_m.data_ptr<T>() : nullptr;
  const T* W = w_t.data_ptr<T>();
  T* H = hs.data_ptr<T>();
  T* C = lstm ? cs.data_ptr<T>() : nullptr;
  T* G = lstm ? acts.data_ptr<T>() : nullptr;
  T* MS = mult ? ms.data_ptr<T>() : nullptr;
  std::copy(h0.data_ptr<T>(), h0.data_ptr<T>() + B * n, H);
  if (lstm) std::copy(c0.data_ptr<T>(), c0.data_ptr<T>() + B * n, C);
  std::vector<T> pre(R);
  for (int64_t t = 0; t < TT; ++t) {
    for (int64_t b = 0; b < B; ++b) {
      const int64_t tb = t * B + b;
      const T* h_prev = H + tb * n;
      const T* m = h_prev;
      if (mult) {
        T* mt = MS + tb * n;
        for (int64_t u = 0; u < n; ++u) mt[u] = XM[tb * n + u] * h_prev[u];
        m = mt;
      }
      T* h_new = H + (tb + B) * n;
      if (!lstm) {
        for (int64_t r = 0; r < R; ++r) pre[r] = X[tb * R + r];
        gemv_t(n, R, W, m, pre.data());
        for (int64_t u = 0; u < n; ++u) h_new[u] = tanh_(pre[u]);
      } else {
        T* gates = G + tb * R;
        for (int64_t r = 0; r < R; ++r) gates[r] = X[tb * R + r];
        gemv_t(n, R, W, m, gates);
        lstm_forward(n, gates, C + tb * n, C + (tb + B) * n, h_new);
      }
    }
  }
}

std::vector<Tensor> multiplicative_forward(Tensor x_pre, Tensor x_m, Tensor w_t, Tensor h0,
                                           Tensor c0) {
  for (auto* t : {&x_pre, &w_t, &h0}) check(*t, "multiplicative_forward input");
  const int64_t TT = x_pre.size(0), B = x_pre.size(1), n = w_t.size(0);
  const bool lstm = c0.numel() > 0;
  auto hs = x_pre.new_empty({TT + 1, B, n});
  auto cs = lstm ? x_pre.new_empty({TT + 1, B, n}) : x_pre.new_empty({0});
  auto acts = lstm ? torch::empty_like(x_pre) : x_pre.new_empty({0});
  auto ms = x_m.numel() ? x_pre.new_empty({TT, B, n}) : x_pre.new_empty({0});
  AT_DISPATCH_FLOATING_TYPES(x_pre.scalar_type(), "multiplicative_forward", [&] {
    multiplicative_forward_impl<scalar_t>(x_pre, x_m, w_t, h0, c0, hs, cs, acts, ms);
  });
  return {hs, cs, acts, ms};
}

// Backward: grad_h [T, B, n], grad_c [B, n] or empty; returns d_pre [T, B, Gn], d_m [T, B, n]
// (dL/dm_t; empty without x_m), d_h0, d_c0 (empty for the RNN).
template <typename T>
void multiplicative_backward_impl(const Tensor& grad_h, const Tensor& grad_c, const Tensor& x_m,
                                  const Tensor& w_t, const Tensor& hs, const Tensor& cs,
                                  const Tensor& acts, Tensor& d_pre, Tensor& d_m, Tensor& d_h0,
                                  Tensor& d_c0) {
  const int64_t TT = grad_h.size(0), B = grad_h.size(1), n = w_t.size(0), R = w_t.size(1);
  const bool lstm = cs.numel() > 0, mult = x_m.numel() > 0;
  const T* GH = grad_h.data_ptr<T>();
  const T* XM = mult ? x_m.data_ptr<T>() : nullptr;
  const T* W = w_t.data_ptr<T>();
  const T* H = hs.data_ptr<T>();
  const T* C = lstm ? cs.data_ptr<T>() : nullptr;
  const T* G = lstm ? acts.data_ptr<T>() : nullptr;
  T* DP = d_pre.data_ptr<T>();
  T* DM = mult ? d_m.data_ptr<T>() : nullptr;
  std::vector<T> dh_rec(B * n, T(0)), dc(B * n, T(0)), dh(n), dm(n), dc_prev(n);
  if (lstm && grad_c.numel()) std::copy(grad_c.data_ptr<T>(), grad_c.data_ptr<T>() + B * n, dc.data());
  for (int64_t t = TT - 1; t >= 0; --t) {
    for (int64_t b = 0; b < B; ++b) {
      const int64_t tb = t * B + b;
      for (int64_t u = 0; u < n; ++u) dh[u] = GH[tb * n + u] + dh_rec[b * n + u];
      T* dp = DP + tb * R;
      if (!lstm) {
        const T* h_new = H + (tb + B) * n;
        for (int64_t u = 0; u < n; ++u) dp[u] = dh[u] * (T(1) - h_new[u] * h_new[u]);
      } else {
        T* dcb = dc.data() + b * n;
        lstm_backward(n, G + tb * R, C + tb * n, C + (tb + B) * n, dh.data(), dcb, dp,
                      dc_prev.data());
        std::copy(dc_prev.begin(), dc_prev.end(), dcb);
      }
      T* dmt = mult ? DM + tb * n : dm.data();
      gemv_back(n, R, W, dp, dmt);
      T* dhb = dh_rec.data() + b * n;
      if (mult) {
        for (int64_t u = 0; u < n; ++u) dhb[u] = dmt[u] * XM[tb * n + u];
      } else {
        for (int64_t u = 0; u < n; ++u) dhb[u] = dmt[u];
      }
    }
  }
  std::copy(dh_rec.begin(), dh_rec.end(), d_h0.data_ptr<T>());
  if (lstm) std::copy(dc.begin(), dc.end(), d_c0.data_ptr<T>());
}

std::vector<Tensor> multiplicative_backward(Tensor grad_h, Tensor grad_c, Tensor x_m, Tensor w_t,
                                            Tensor hs, Tensor cs, Tensor acts) {
  for (auto* t : {&grad_h, &w_t, &hs}) check(*t, "multiplicative_backward input");
  const int64_t TT = grad_h.size(0), B = grad_h.size(1), n = w_t.size(0), R = w_t.size(1);
  const bool lstm = cs.numel() > 0;
  auto d_pre = grad_h.new_empty({TT, B, R});
  auto d_m = x_m.numel() ? grad_h.new_empty({TT, B, n}) : grad_h.new_empty({0});
  auto d_h0 = grad_h.new_empty({B, n});
  auto d_c0 = lstm ? grad_h.new_empty({B, n}) : grad_h.new_empty({0});
  AT_DISPATCH_FLOATING_TYPES(grad_h.scalar_type(), "multiplicative_backward", [&] {
    multiplicative_backward_impl<scalar_t>(grad_h, grad_c, x_m, w_t, hs, cs, acts, d_pre, d_m,
                                           d_h0, d_c0);
  });
  return {d_pre, d_m, d_h0, d_c0};
}

// ------------------------------------------------------------------------------------------
// Multi-matrix RNN/LSTM (multi_matrix): G groups (1: tanh RNN; 4: LSTM gates i, f, o, g) of K
// choice matrices, mixed by v_t = softmax(x_v_t + W_vh h_{t-1} + W_vv v_{t-1}) per group.
//   x_pre [T, B, Gn], x_v [T, B, GK], h0 [B, n], c0 [B, n] or empty, v0 [B, GK],
//   choices [G, K, n, n] (W_g[k], row = output unit), w_vh [GK, n], w_vv [GK, GK]
// Returns hs [T+1, B, n], vs [T+1, B, GK], cs [T+1, B, n] (LSTM), acts [T, B, Gn] (LSTM),
// us [T, B, GKn] (u_t[g, k] = W_g[k] h_{t-1}, for the backward).
// Per step, u for all (g, k) is one product with the transposed stack [n, GKn] of all choices.

template <typename T>
void multi_matrix_forward_impl(const Tensor& x_pre, const Tensor& x_v, const Tensor& h0,
                               const Tensor& c0, const Tensor& v0, const Tensor& choices_t,
                               const Tensor& w_vh_t, const Tensor& w_vv_t, int64_t Gs,
                               Tensor& hs, Tensor& vs, Tensor& cs, Tensor& acts, Tensor& us) {
  const int64_t TT = x_pre.size(0), B = x_pre.size(1), n = h0.size(1), GK = x_v.size(2);
  const int64_t K = GK / Gs, GKn = GK * n;
  const bool lstm = c0.numel() > 0;
  const T* X = x_pre.data_ptr<T>();
  const T* XV = x_v.data_ptr<T>();
  const T* WT = choices_t.data_ptr<T>();
  const T* WVH = w_vh_t.data_ptr<T>();
  const T* WVV = w_vv_t.data_ptr<T>();
  T* H = hs.data_ptr<T>();
  T* V = vs.data_ptr<T>();
  T* C = lstm ? cs.data_ptr<T>() : nullptr;
  T* A = lstm ? acts.data_ptr<T>() : nullptr;
  T* U = us.data_ptr<T>();
  std::copy(h0.data_ptr<T>(), h0.data_ptr<T>() + B * n, H);
  std::copy(v0.data_ptr<T>(), v0.data_ptr<T>() + B * GK, V);
  if (lstm) std::copy(c0.data_ptr<T>(), c0.data_ptr<T>() + B * n, C);
  std::vector<T> pre(Gs * n);
  const bool batched = B >= GEMM_MIN_BATCH;
  for (int64_t t = 0; t < TT; ++t) {
    if (batched) {  // u for every b at once
      Tensor u_t = us.select(0, t);
      at::mm_out(u_t, hs.select(0, t), choices_t);
    }
    for (int64_t b = 0; b < B; ++b) {
      const int64_t tb = t * B + b;
      const T* h_prev = H + tb * n;
      const T* v_prev = V + tb * GK;
      T* v = V + (tb + B) * GK;
      for (int64_t j = 0; j < GK; ++j) v[j] = XV[tb * GK + j];
      gemv_t(n, GK, WVH, h_prev, v);
      gemv_t(GK, GK, WVV, v_prev, v);
      for (int64_t g = 0; g < Gs; ++g) {  // softmax per group
        T* vg = v + g * K;
        T top = vg[0];
        for (int64_t k = 1; k < K; ++k) top = std::max(top, vg[k]);
        T sum = 0;
        for (int64_t k = 0; k < K; ++k) sum += (vg[k] = exp_(vg[k] - top));
        for (int64_t k = 0; k < K; ++k) vg[k] /= sum;
      }
      T* u = U + tb * GKn;
      if (!batched) {
        for (int64_t r = 0; r < GKn; ++r) u[r] = 0;
        gemv_t(n, GKn, WT, h_prev, u);
      }
      T* p = lstm ? A + tb * Gs * n : pre.data();
      for (int64_t r = 0; r < Gs * n; ++r) p[r] = X[tb * Gs * n + r];
      for (int64_t g = 0; g < Gs; ++g)
        for (int64_t k = 0; k < K; ++k) axpy(n, v[g * K + k], u + (g * K + k) * n, p + g * n);
      T* h_new = H + (tb + B) * n;
      if (!lstm) {
        for (int64_t i = 0; i < n; ++i) h_new[i] = tanh_(p[i]);
      } else {
        lstm_forward(n, p, C + tb * n, C + (tb + B) * n, h_new);
      }
    }
  }
}

std::vector<Tensor> multi_matrix_forward(Tensor x_pre, Tensor x_v, Tensor h0, Tensor c0,
                                         Tensor v0, Tensor choices, Tensor w_vh, Tensor w_vv) {
  for (auto* t : {&x_pre, &x_v, &h0, &v0}) check(*t, "multi_matrix_forward input");
  const int64_t TT = x_pre.size(0), B = x_pre.size(1), n = choices.size(2), GK = x_v.size(2);
  const bool lstm = c0.numel() > 0;
  auto choices_t = choices.reshape({GK * n, n}).t().contiguous();
  auto w_vh_t = w_vh.t().contiguous();
  auto w_vv_t = w_vv.t().contiguous();
  auto hs = x_pre.new_empty({TT + 1, B, n});
  auto vs = x_pre.new_empty({TT + 1, B, GK});
  auto cs = lstm ? x_pre.new_empty({TT + 1, B, n}) : x_pre.new_empty({0});
  auto acts = lstm ? torch::empty_like(x_pre) : x_pre.new_empty({0});
  auto us = x_pre.new_empty({TT, B, GK * n});
  AT_DISPATCH_FLOATING_TYPES(x_pre.scalar_type(), "multi_matrix_forward", [&] {
    multi_matrix_forward_impl<scalar_t>(x_pre, x_v, h0, c0, v0, choices_t, w_vh_t, w_vv_t,
                                        choices.size(0), hs, vs, cs, acts, us);
  });
  return {hs, vs, cs, acts, us};
}

// Backward: grad_h [T, B, n], grad_v [B, GK], grad_c [B, n] or empty; returns d_pre
// [T, B, Gn], d_z [T, B, GK] (gradient of the softmax's input), d_h0, d_c0, d_v0 and d_u
// [T, B, GKn] (gradient of u_t, whose product with h_{t-1} gives the choices' gradient).
template <typename T>
void multi_matrix_backward_impl(const Tensor& grad_h, const Tensor& grad_v, const Tensor& grad_c,
                                const Tensor& choices_t, const Tensor& w_vh, const Tensor& w_vv,
                                const Tensor& hs, const Tensor& vs, const Tensor& cs,
                                const Tensor& acts, const Tensor& us, int64_t Gs, Tensor& d_pre,
                                Tensor& d_z, Tensor& d_h0, Tensor& d_c0, Tensor& d_v0,
                                Tensor& d_mixed) {
  const int64_t TT = grad_h.size(0), B = grad_h.size(1), n = hs.size(2), GK = vs.size(2);
  const int64_t K = GK / Gs, GKn = GK * n;
  const bool lstm = cs.numel() > 0;
  const T* GH = grad_h.data_ptr<T>();
  const T* WT = choices_t.data_ptr<T>();
  const T* WVH = w_vh.data_ptr<T>();
  const T* WVV = w_vv.data_ptr<T>();
  const T* H = hs.data_ptr<T>();
  const T* V = vs.data_ptr<T>();
  const T* C = lstm ? cs.data_ptr<T>() : nullptr;
  const T* A = lstm ? acts.data_ptr<T>() : nullptr;
  const T* U = us.data_ptr<T>();
  T* DP = d_pre.data_ptr<T>();
  T* DZ = d_z.data_ptr<T>();
  T* DM = d_mixed.data_ptr<T>();
  // dh_rec[b]: the gradient reaching h_t of example b from step t + 1
  Tensor dh_rec_t = torch::zeros({B, n}, grad_h.options());
  T* dh_rec = dh_rec_t.data_ptr<T>();
  std::vector<T> dc(B * n, T(0));
  std::vector<T> dv_rec(grad_v.data_ptr<T>(), grad_v.data_ptr<T>() + B * GK);
  if (lstm && grad_c.numel())
    std::copy(grad_c.data_ptr<T>(), grad_c.data_ptr<T>() + B * n, dc.data());
  std::vector<T> dh(n), dv(GK), dc_prev(n);
  const bool batched = B >= GEMM_MIN_BATCH;
  const Tensor choices_tt = batched ? choices_t.t() : Tensor();  // [GKn, n]
  for (int64_t t = TT - 1; t >= 0; --t) {
    for (int64_t b = 0; b < B; ++b) {
      const int64_t tb = t * B + b;
      const T* v = V + (tb + B) * GK;
      const T* u = U + tb * GKn;
      for (int64_t i = 0; i < n; ++i) dh[i] = GH[tb * n + i] + dh_rec[b * n + i];
      T* dp = DP + tb * Gs * n;
      if (!lstm) {
        const T* h_new = H + (tb + B) * n;
        for (int64_t i = 0; i < n; ++i) dp[i] = dh[i] * (T(1) - h_new[i] * h_new[i]);
      } else {
        T* dcb = dc.data() + b * n;
        lstm_backward(n, A + tb * Gs * n, C + tb * n, C + (tb + B) * n, dh.data(), dcb, dp,
                      dc_prev.data());
        std::copy(dc_prev.begin(), dc_prev.end(), dcb);
      }
      // dv[g, k] = dpre[g] . u[g, k]; weighted[g, k] = v[g, k] dpre[g] (= dL/du[g, k])
      const T* dvb = dv_rec.data() + b * GK;
      T* weighted = DM + tb * GKn;
      for (int64_t g = 0; g < Gs; ++g) {
        for (int64_t k = 0; k < K; ++k) {
          const int64_t gk = g * K + k;
          dv[gk] = dvb[gk] + dot(n, dp + g * n, u + gk * n);
          for (int64_t i = 0; i < n; ++i) weighted[gk * n + i] = v[gk] * dp[g * n + i];
        }
      }
      T* dz = DZ + tb * GK;
      for (int64_t g = 0; g < Gs; ++g) {  // softmax backward per group
        T s = 0;
        for (int64_t k = 0; k < K; ++k) s += v[g * K + k] * dv[g * K + k];
        for (int64_t k = 0; k < K; ++k) dz[g * K + k] = v[g * K + k] * (dv[g * K + k] - s);
      }
      // dh_{t-1} = sum_{g,k} v[g,k] W_g[k]^T dpre[g] + W_vh^T dz;  dv_{t-1} = W_vv^T dz
      // (at large batches the first term for every b at once, below)
      T* dhb = dh_rec + b * n;
      if (batched) {
        for (int64_t i = 0; i < n; ++i) dhb[i] = 0;
      } else {
        gemv_back(n, GKn, WT, weighted, dhb);
      }
      T* dv_prev = dv_rec.data() + b * GK;
      for (int64_t l = 0; l < GK; ++l) dv_prev[l] = 0;
      for (int64_t j = 0; j < GK; ++j) {
        axpy(n, dz[j], WVH + j * n, dhb);
        axpy(GK, dz[j], WVV + j * GK, dv_prev);
      }
    }
    if (batched) dh_rec_t.addmm_(d_mixed.select(0, t), choices_tt);
  }
  std::copy(dh_rec, dh_rec + B * n, d_h0.data_ptr<T>());
  std::copy(dv_rec.begin(), dv_rec.end(), d_v0.data_ptr<T>());
  if (lstm) std::copy(dc.begin(), dc.end(), d_c0.data_ptr<T>());
}

std::vector<Tensor> multi_matrix_backward(Tensor grad_h, Tensor grad_v, Tensor grad_c,
                                          Tensor choices, Tensor w_vh, Tensor w_vv, Tensor hs,
                                          Tensor vs, Tensor cs, Tensor acts, Tensor us) {
  for (auto* t : {&grad_h, &grad_v, &w_vh, &w_vv, &hs, &vs, &us})
    check(*t, "multi_matrix_backward input");
  const int64_t TT = grad_h.size(0), B = grad_h.size(1), n = choices.size(2);
  const int64_t Gs = choices.size(0), GK = grad_v.size(1);
  const bool lstm = cs.numel() > 0;
  auto choices_t = choices.reshape({GK * n, n}).t().contiguous();
  auto d_pre = grad_h.new_empty({TT, B, Gs * n});
  auto d_z = grad_h.new_empty({TT, B, GK});
  auto d_h0 = grad_h.new_empty({B, n});
  auto d_c0 = lstm ? grad_h.new_empty({B, n}) : grad_h.new_empty({0});
  auto d_v0 = grad_h.new_empty({B, GK});
  auto d_u = torch::empty_like(us);
  AT_DISPATCH_FLOATING_TYPES(grad_h.scalar_type(), "multi_matrix_backward", [&] {
    multi_matrix_backward_impl<scalar_t>(grad_h, grad_v, grad_c, choices_t, w_vh, w_vv, hs, vs,
                                         cs, acts, us, Gs, d_pre, d_z, d_h0, d_c0, d_v0, d_u);
  });
  return {d_pre, d_z, d_h0, d_c0, d_v0, d_u};
}

// ------------------------------------------------------------------------------------------
// Dyck-RNN stack (multi_matrix): h_t = g_t [x_t; h_{t-1}[0:m-1]] + (1 - g_t) [h_{t-1}[1:m]; 0].
//   x [T, B, d] (embeddings), gate [T, B] (g_t), h0 [B, m, d]; returns stacks [T, B, m, d].

template <typename T>
void dyck_stack_forward_impl(const Tensor& x, const Tensor& gate, const Tensor& h0,
                             Tensor& stacks) {
  const int64_t TT = x.size(0), B = x.size(1), d = x.size(2), m = h0.size(1), md = m * d;
  const T* X = x.data_ptr<T>();
  const T* Gt = gate.data_ptr<T>();
  T* S = stacks.data_ptr<T>();
  for (int64_t t = 0; t < TT; ++t) {
    for (int64_t b = 0; b < B; ++b) {
      const int64_t tb = t * B + b;
      const T* prev = t ? S + (tb - B) * md : h0.data_ptr<T>() + b * md;
      T* cur = S + tb * md;
      const T g = Gt[tb];
      for (int64_t j = 0; j < md; ++j) {
        const T pushed = j < d ? X[tb * d + j] : prev[j - d];
        const T popped = j + d < md ? prev[j + d] : T(0);
        cur[j] = popped + g * (pushed - popped);
      }
    }
  }
}

Tensor dyck_stack_forward(Tensor x, Tensor gate, Tensor h0) {
  for (auto* t : {&x, &gate, &h0}) check(*t, "dyck_stack_forward input");
  auto stacks = x.new_empty({x.size(0), x.size(1), h0.size(1), h0.size(2)});
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "dyck_stack_forward", [&] {
    dyck_stack_forward_impl<scalar_t>(x, gate, h0, stacks);
  });
  return stacks;
}

// Backward: d_stacks [T, B, m, d]; returns d_x [T, B, d], d_gate [T, B], d_h0 [B, m, d].
template <typename T>
void dyck_stack_backward_impl(const Tensor& d_stacks, const Tensor& x, const Tensor& gate,
                              const Tensor& h0, const Tensor& stacks, Tensor& d_x,
                              Tensor& d_gate, Tensor& d_h0) {
  const int64_t TT = x.size(0), B = x.size(1), d = x.size(2), m = h0.size(1), md = m * d;
  const T* DS = d_stacks.data_ptr<T>();
  const T* X = x.data_ptr<T>();
  const T* Gt = gate.data_ptr<T>();
  const T* S = stacks.data_ptr<T>();
  T* DX = d_x.data_ptr<T>();
  T* DG = d_gate.data_ptr<T>();
  std::vector<T> dh(B * md, T(0)), dprev(md);
  for (int64_t t = TT - 1; t >= 0; --t) {
    for (int64_t b = 0; b < B; ++b) {
      const int64_t tb = t * B + b;
      const T* prev = t ? S + (tb - B) * md : h0.data_ptr<T>() + b * md;
      T* dcur = dh.data() + b * md;
      for (int64_t j = 0; j < md; ++j) dcur[j] += DS[tb * md + j];
      const T g = Gt[tb];
      T dg = 0;
      for (int64_t j = 0; j < md; ++j) dprev[j] = 0;
      for (int64_t j = 0; j < md; ++j) {
        const T pushed = j < d ? X[tb * d + j] : prev[j - d];
        const T popped = j + d < md ? prev[j + d] : T(0);
        dg += dcur[j] * (pushed - popped);
        if (j < d) {
          DX[tb * d + j] = g * dcur[j];
        } else {
          dprev[j - d] += g * dcur[j];
        }
        if (j + d < md) dprev[j + d] += (T(1) - g) * dcur[j];
      }
      DG[tb] = dg;
      std::copy(dprev.begin(), dprev.end(), dcur);
    }
  }
  std::copy(dh.begin(), dh.end(), d_h0.data_ptr<T>());
}

std::vector<Tensor> dyck_stack_backward(Tensor d_stacks, Tensor x, Tensor gate, Tensor h0,
                                        Tensor stacks) {
  for (auto* t : {&d_stacks, &x, &gate, &h0, &stacks}) check(*t, "dyck_stack_backward input");
  auto d_x = torch::empty_like(x);
  auto d_gate = torch::empty_like(gate);
  auto d_h0 = torch::empty_like(h0);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "dyck_stack_backward", [&] {
    dyck_stack_backward_impl<scalar_t>(d_stacks, x, gate, h0, stacks, d_x, d_gate, d_h0);
  });
  return {d_x, d_gate, d_h0};
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("mixed_lstm_forward", &mixed_lstm_forward);
  m.def("mixed_lstm_backward", &mixed_lstm_backward);
  m.def("multiplicative_forward", &multiplicative_forward);
  m.def("multiplicative_backward", &multiplicative_backward);
  m.def("multi_matrix_forward", &multi_matrix_forward);
  m.def("multi_matrix_backward", &multi_matrix_backward);
  m.def("dyck_stack_forward", &dyck_stack_forward);
  m.def("dyck_stack_backward", &dyck_stack_backward);
}

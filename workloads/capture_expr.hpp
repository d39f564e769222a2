#pragma once
// The integer polynomials of a trainsim.capture document (workloads/capture/SCHEMA.md, "Symbols and
// expressions"; the reference is trainsim_capture/poly.py). Every dimension a capture records is
// written as one, so evaluating them at other symbol values gives the capture of another size of
// the same architecture (SCHEMA.md, "Scaling").
//
//     expr   := term (("+" | "-") term)*
//     term   := [int "*"] factor ("*" factor)* ["/" int]   |   int ["/" int]
//     factor := symbol ["^" int]
//
// poly.py prints a rational constant term as "3/2", so a constant may carry "/int" too. Bounds keep
// a hostile document cheap: at most MAX_EXPR_CHARS characters, powers up to MAX_EXPR_POWER, integers
// below 10^15; evaluation is exact (128-bit rationals) and refuses overflow and non-integer results.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainsim::wl {

using SymbolValues = std::map<std::string, std::int64_t, std::less<>>;

inline constexpr std::size_t MAX_EXPR_CHARS = 512;
inline constexpr int MAX_EXPR_POWER = 8;

struct ExprTerm {
  std::int64_t num = 0, den = 1;                  // coefficient num/den, den > 0
  std::vector<std::pair<std::string, int>> factors;  // symbol, power >= 1
};

class Expr {
 public:
  Expr() = default;
  static Expr constant(std::int64_t value);
  // Returns false (and says why in *error) for text outside the grammar or its bounds.
  static bool parse(std::string_view text, Expr& out, std::string* error);

  // Returns false (and says why) when a symbol has no value, a step overflows or the result is not
  // an integer that fits 64 bits.
  bool evaluate(const SymbolValues& values, std::int64_t& out, std::string* error) const;
  bool mentions(std::string_view symbol) const;
  const std::string& text() const { return text_; }
  const std::vector<ExprTerm>& terms() const { return terms_; }

 private:
  std::vector<ExprTerm> terms_;
  std::string text_;
};

}  // namespace trainsim::wl

#include "capture_expr.hpp"

#include <cctype>
#include <limits>
#include <numeric>

namespace trainsim::wl {
namespace {

__extension__ using I128 = __int128;
constexpr std::int64_t MAX_INT_LITERAL = 1'000'000'000'000'000;  // 10^15: beyond any capture's dimension

struct Lexer {
  std::string_view text;
  std::size_t pos = 0;
  void skip() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])) != 0) ++pos;
  }
  bool at_end() {
    skip();
    return pos >= text.size();
  }
  char peek() {
    skip();
    return pos < text.size() ? text[pos] : '\0';
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos;
    return true;
  }
  bool integer(std::int64_t& out) {
    if (std::isdigit(static_cast<unsigned char>(peek())) == 0) return false;
    out = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])) != 0) {
      out = out * 10 + (text[pos] - '0');
      if (out >= MAX_INT_LITERAL) return false;
      ++pos;
    }
    return true;
  }
  bool symbol(std::string& out) {
    const char c = peek();
    if (std::isalpha(static_cast<unsigned char>(c)) == 0 && c != '_') return false;
    const std::size_t start = pos;
    while (pos < text.size() && (std::isalnum(static_cast<unsigned char>(text[pos])) != 0 || text[pos] == '_')) ++pos;
    out = std::string(text.substr(start, pos - start));
    return true;
  }
};

bool fail(std::string* error, std::string why) {
  if (error != nullptr) *error = std::move(why);
  return false;
}

I128 gcd128(I128 a, I128 b) {
  if (a < 0) a = -a;
  while (b != 0) {
    const I128 t = a % b;
    a = b;
    b = t < 0 ? -t : t;
  }
  return a;
}

}  // namespace

Expr Expr::constant(std::int64_t value) {
  Expr e;
  e.terms_.push_back({value, 1, {}});
  e.text_ = std::to_string(value);
  return e;
}

bool Expr::parse(std::string_view text, Expr& out, std::string* error) {
  if (text.size() > MAX_EXPR_CHARS) return fail(error, "an expression of at most 512 characters");
  Lexer lex{text};
  Expr e;
  e.text_ = std::string(text);
  if (lex.at_end()) return fail(error, "an expression (the text is empty)");
  std::int64_t sign = 1;
  if (lex.accept('-')) sign = -1;
  else lex.accept('+');
  while (true) {
    ExprTerm term;
    term.num = sign;
    std::int64_t literal = 0;
    bool need_factor = true;
    if (lex.integer(literal)) {
      term.num *= literal;
      // "int" alone, "int/int", or "int*factor..."
      need_factor = lex.accept('*');
    }
    if (need_factor) {
      while (true) {
        std::string name;
        if (!lex.symbol(name)) return fail(error, "a symbol at character " + std::to_string(lex.pos + 1));
        int power = 1;
        if (lex.accept('^')) {
          std::int64_t p = 0;
          if (!lex.integer(p) || p < 1 || p > MAX_EXPR_POWER) {
            return fail(error, "a power from 1 to " + std::to_string(MAX_EXPR_POWER) + " after '^'");
          }
          power = static_cast<int>(p);
        }
        bool merged = false;
        for (auto& [s, q] : term.factors) {
          if (s == name) {
            q += power;
            merged = true;
          }
        }
        if (!merged) term.factors.emplace_back(std::move(name), power);
        int degree = 0;
        for (const auto& f : term.factors) degree += f.second;
        if (degree > MAX_EXPR_POWER) return fail(error, "a term of degree at most " + std::to_string(MAX_EXPR_POWER));
        if (!lex.accept('*')) break;
      }
    }
    if (lex.accept('/')) {
      std::int64_t den = 0;
      if (!lex.integer(den) || den == 0) return fail(error, "a positive integer after '/'");
      term.den = den;
    }
    if (term.factors.size() > 16) return fail(error, "a term of at most 16 factors");
    e.terms_.push_back(std::move(term));
    if (e.terms_.size() > 64) return fail(error, "an expression of at most 64 terms");
    if (lex.at_end()) break;
    if (lex.accept('+')) sign = 1;
    else if (lex.accept('-')) sign = -1;
    else return fail(error, "'+', '-', '*' or '/' at character " + std::to_string(lex.pos + 1));
  }
  out = std::move(e);
  return true;
}

bool Expr::evaluate(const SymbolValues& values, std::int64_t& out, std::string* error) const {
  I128 num = 0, den = 1;
  constexpr I128 LIMIT = static_cast<I128>(1) << 100;  // headroom so that every product below fits
  auto too_big = [](I128 v) { return v > LIMIT || v < -LIMIT; };
  for (const auto& t : terms_) {
    I128 v = t.num;
    for (const auto& [name, power] : t.factors) {
      auto it = values.find(name);
      if (it == values.end()) return fail(error, "a value for symbol " + name + " (" + text_ + ")");
      for (int p = 0; p < power; ++p) {
        if (__builtin_mul_overflow(v, static_cast<I128>(it->second), &v) || too_big(v)) {
          return fail(error, "a value that fits 64 bits (" + text_ + " overflows)");
        }
      }
    }
    // num/den + v/t.den
    I128 a = 0, b = 0, d = 0;
    if (__builtin_mul_overflow(num, static_cast<I128>(t.den), &a) || __builtin_mul_overflow(v, den, &b) ||
        __builtin_mul_overflow(den, static_cast<I128>(t.den), &d) || __builtin_add_overflow(a, b, &num) ||
        too_big(num) || too_big(d)) {
      return fail(error, "a value that fits 64 bits (" + text_ + " overflows)");
    }
    den = d;
    const I128 g = gcd128(num, den);
    if (g > 1) {
      num /= g;
      den /= g;
    }
  }
  if (num % den != 0) return fail(error, "an integer value (" + text_ + " is not one at these symbols)");
  const I128 r = num / den;
  if (r > std::numeric_limits<std::int64_t>::max() || r < std::numeric_limits<std::int64_t>::min()) {
    return fail(error, "a value that fits 64 bits (" + text_ + " overflows)");
  }
  out = static_cast<std::int64_t>(r);
  return true;
}

bool Expr::mentions(std::string_view symbol) const {
  for (const auto& t : terms_) {
    for (const auto& f : t.factors) {
      if (f.first == symbol) return true;
    }
  }
  return false;
}

}  // namespace trainsim::wl

// Walks a parallel_for body and turns every DistArray access into an Access with affine
// subscripts. The walk is a small abstract interpreter: locals, references, row views, Key copies
// and parameters of inlined helpers are bound to symbolic values; it never guesses. Whatever it
// cannot see through becomes an access with unknown subscripts plus a note saying why.
#include "access_collector.h"

#include "array_origin.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <set>

#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"
#include "clang/AST/StmtOpenMP.h"
#include "clang/Analysis/Analyses/ExprMutationAnalyzer.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace tessera::compiler {
namespace {

using namespace clang;  // NOLINT(build/namespaces): the file is all Clang AST code

constexpr int kMaxInlineDepth = 16;

enum class TypeKind { kOther, kDistArray, kRelaxedArray, kRowView, kRelaxedRowView, kKey };

const CXXRecordDecl* RecordOf(QualType t) {
  t = t.getNonReferenceType();
  if (const auto* p = t->getAs<PointerType>()) t = p->getPointeeType();
  return t->getAsCXXRecordDecl();
}

TypeKind Classify(QualType t) {
  const CXXRecordDecl* rd = RecordOf(t);
  if (rd == nullptr) return TypeKind::kOther;
  const DeclContext* dc = rd->getDeclContext();
  const auto* ns = dyn_cast<NamespaceDecl>(dc);
  if (ns == nullptr || ns->getName() != "tessera" ||
      !isa<TranslationUnitDecl>(ns->getDeclContext())) {
    return TypeKind::kOther;
  }
  StringRef name = rd->getName();
  if (name == "DistArray") return TypeKind::kDistArray;
  if (name == "RelaxedArray") return TypeKind::kRelaxedArray;
  if (name == "RowView") return TypeKind::kRowView;
  if (name == "RelaxedRowView") return TypeKind::kRelaxedRowView;
  if (name == "Key") return TypeKind::kKey;
  return TypeKind::kOther;
}

bool IsArrayLike(TypeKind k) {
  return k == TypeKind::kDistArray || k == TypeKind::kRelaxedArray || k == TypeKind::kRowView ||
         k == TypeKind::kRelaxedRowView;
}

bool InTesseraNamespace(const Decl* d) {
  for (const DeclContext* dc = d->getDeclContext(); dc != nullptr; dc = dc->getParent()) {
    if (const auto* ns = dyn_cast<NamespaceDecl>(dc)) {
      if (ns->getName() == "tessera" && isa<TranslationUnitDecl>(ns->getDeclContext())) {
        return true;
      }
    }
  }
  return false;
}

// Strips the wrappers that do not change which object an expression denotes.
const Expr* Strip(const Expr* e) {
  while (true) {
    const Expr* before = e;
    e = e->IgnoreParenImpCasts();
    if (const auto* ewc = dyn_cast<ExprWithCleanups>(e)) e = ewc->getSubExpr();
    if (const auto* mte = dyn_cast<MaterializeTemporaryExpr>(e)) e = mte->getSubExpr();
    if (const auto* bte = dyn_cast<CXXBindTemporaryExpr>(e)) e = bte->getSubExpr();
    if (const auto* fc = dyn_cast<CXXFunctionalCastExpr>(e)) e = fc->getSubExpr();
    if (const auto* sc = dyn_cast<CXXStaticCastExpr>(e)) e = sc->getSubExpr();
    if (const auto* cc = dyn_cast<CStyleCastExpr>(e)) e = cc->getSubExpr();
    if (const auto* ce = dyn_cast<CXXConstructExpr>(e)) {
      if (ce->getNumArgs() == 1 && ce->getConstructor()->isCopyOrMoveConstructor()) {
        e = ce->getArg(0);
      }
    }
    if (e == before) return e;
  }
}

// The template arguments <T, N> of a DistArray/RelaxedArray type.
bool ArrayTypeArgs(QualType t, QualType* elem, int* rank) {
  const auto* spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(RecordOf(t));
  if (spec == nullptr || spec->getTemplateArgs().size() < 2) return false;
  *elem = spec->getTemplateArgs()[0].getAsType();
  *rank = static_cast<int>(spec->getTemplateArgs()[1].getAsIntegral().getExtValue());
  return true;
}

// Element type names independent of the platform's spelling: int64 rather than "long".
std::string TypeName(QualType t, const ASTContext& ctx) {
  t = t.getCanonicalType().getUnqualifiedType();
  if (t->isBooleanType()) return "bool";
  if (t->isIntegerType() && !t->isDependentType()) {
    return (t->isSignedIntegerType() ? "int" : "uint") + std::to_string(ctx.getTypeSize(t));
  }
  if (t->isSpecificBuiltinType(BuiltinType::Float)) return "float";
  if (t->isSpecificBuiltinType(BuiltinType::Double)) return "double";
  return t.getAsString(ctx.getPrintingPolicy());
}

std::optional<int64_t> EvalConstInt(const Expr* e, const ASTContext& ctx) {
  if (e->isValueDependent() || e->isTypeDependent()) return std::nullopt;
  Expr::EvalResult r;
  if (!e->EvaluateAsInt(r, ctx)) return std::nullopt;
  return r.Val.getInt().getExtValue();
}

// A symbolic value bound to a variable or produced by an expression.
struct Value {
  enum class Kind { kUnknown, kInt, kKey, kArray, kLambda };
  Kind kind = Kind::kUnknown;
  Affine affine;                     // kInt
  int array = -1;                    // kArray: index in SiteModel::arrays
  std::vector<Affine> prefix;        // kArray: leading subscripts already fixed (row view, element)
  const CXXMethodDecl* lambda_call = nullptr;  // kLambda

  static Value Int(Affine a) {
    Value v;
    v.kind = a.known() ? Kind::kInt : Kind::kUnknown;
    v.affine = std::move(a);
    return v;
  }
};

// How an access expression is used by its context.
enum class Use { kNone, kRead, kWrite, kUpdate, kAdd, kEscape };

class BodyWalker {
 public:
  BodyWalker(ASTContext& ctx, const CallIndex& calls, CollectedSite* out)
      : ctx_(ctx), sm_(ctx.getSourceManager()), calls_(calls), out_(out),
        model_(out->result.model) {}

  // `op`: the lambda's call operator as instantiated for this loop (for a generic lambda, the
  // specialization, whose body is not type-dependent).
  void Run(const CallExpr* call, const CXXMethodDecl* op, const ValueDecl* space_decl,
           int space_array, const FunctionDecl* enclosing) {
    enclosing_ = enclosing;
    lambda_body_ = op->getBody();
    frames_.emplace_back();
    const int n = model_.key_rank;
    if (op->getNumParams() >= 1) {
      Value key;
      key.kind = Value::Kind::kKey;
      frames_.back()[op->getParamDecl(0)] = key;
    }
    std::vector<Affine> identity;
    for (int i = 0; i < n; ++i) identity.push_back(Affine::KeyComponent(n, i));
    // The loop reads its element (even when the body ignores it): the space is always placed.
    AddAccess(space_array, identity, Use::kRead, call->getBeginLoc(), "");
    if (op->getNumParams() >= 2) {
      Value elem;
      elem.kind = Value::Kind::kArray;
      elem.array = space_array;
      elem.prefix = identity;
      frames_.back()[op->getParamDecl(1)] = elem;
    }
    (void)space_decl;
    mutation_scopes_.push_back(lambda_body_);
    Visit(lambda_body_, Use::kNone);
    mutation_scopes_.pop_back();
    frames_.pop_back();
    ExpandWildcards();
    ExpandParameterAliases();
  }

  // The array the iteration-space expression denotes (through references too).
  int ResolveSpace(const Expr* space, const ValueDecl* decl) {
    frames_.emplace_back();
    Value v = Eval(space);
    frames_.pop_back();
    if (v.kind == Value::Kind::kArray && v.prefix.empty()) return v.array;
    return ArrayId(decl);
  }

  // Registers (or finds) the array named by `decl`.
  int ArrayId(const ValueDecl* decl) {
    auto it = array_ids_.find(decl);
    if (it != array_ids_.end()) return it->second;
    int id = NewArray(decl->getNameAsString(), decl->getType(), decl);
    array_ids_[decl] = id;
    return id;
  }

  int NewArray(const std::string& name, QualType type, const ValueDecl* decl) {
    ArrayInfo info;
    info.name = name;
    QualType elem;
    int rank = 0;
    QualType array_type = type.getNonReferenceType();
    if (const auto* p = array_type->getAs<PointerType>()) array_type = p->getPointeeType();
    const TypeKind tk = Classify(array_type);
    if (tk == TypeKind::kRowView || tk == TypeKind::kRelaxedRowView) {
      // A view of an unknown 2-D array.
      const auto* spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(RecordOf(array_type));
      if (spec != nullptr && spec->getTemplateArgs().size() >= 1) {
        elem = spec->getTemplateArgs()[0].getAsType().getUnqualifiedType();
        info.rank = 2;
        info.element_type = TypeName(elem, ctx_);
        info.element_bytes = static_cast<int>(ctx_.getTypeSizeInChars(elem).getQuantity());
      }
    } else if (ArrayTypeArgs(array_type, &elem, &rank)) {
      info.rank = rank;
      info.element_type = TypeName(elem, ctx_);
      if (!elem->isDependentType() && !elem->isIncompleteType()) {
        info.element_bytes = static_cast<int>(ctx_.getTypeSizeInChars(elem).getQuantity());
      }
    }
    info.relaxed = tk == TypeKind::kRelaxedArray || tk == TypeKind::kRelaxedRowView;
    if (info.relaxed && decl != nullptr) info.staleness = RelaxedStaleness(decl);
    if (OriginResult o = FindArrayOrigin(decl, ctx_); o.found) {
      info.origin = o.origin;
      info.loop_only = o.loop_only;
      info.serial_use = o.serial_use;
    } else {
      info.origin_unknown = decl == nullptr ? "the name was not resolved" : o.why_not;
    }
    // Two names may denote one array only if element type, rank and kind agree.
    array_sigs_.push_back(info.element_type + "/" + std::to_string(info.rank) +
                          (info.relaxed ? "/relaxed" : ""));
    model_.arrays.push_back(info);
    return static_cast<int>(model_.arrays.size()) - 1;
  }

 private:
  using Frame = llvm::DenseMap<const Decl*, Value>;

  // ---- conservative bookkeeping --------------------------------------------------------------

  void Note(SourceLocation loc, std::string text) {
    for (const auto& n : out_->notes) {
      if (n.first == loc && n.second == text) return;
    }
    out_->notes.emplace_back(loc, text);
    out_->result.conservative.push_back(text);
  }

  std::optional<int> RelaxedStaleness(const ValueDecl* decl) {
    const auto* vd = dyn_cast<VarDecl>(decl);
    if (vd == nullptr || !vd->hasInit()) return std::nullopt;
    const auto* call = dyn_cast<CallExpr>(Strip(vd->getInit()));
    if (call == nullptr || call->getNumArgs() < 3) return std::nullopt;
    auto v = EvalConstInt(call->getArg(2), ctx_);
    return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
  }

  // ---- recording -----------------------------------------------------------------------------

  void AddAccess(int array, std::vector<Affine> subs, Use use, SourceLocation loc,
                 const std::string& reason) {
    if (use == Use::kNone) return;
    Access a;
    a.array = array;
    const int rank = model_.arrays[array].rank;
    subs.resize(rank, Affine::Unknown());
    if (use == Use::kEscape) {
      for (Affine& s : subs) s = Affine::Unknown();
    }
    a.subscripts = std::move(subs);
    a.read = use != Use::kWrite;
    a.write = use != Use::kRead;
    a.additive = use == Use::kAdd;
    a.conservative_reason = reason;
    SourceLocation eloc = sm_.getExpansionLoc(loc);
    a.line = sm_.getExpansionLineNumber(eloc);
    a.column = sm_.getExpansionColumnNumber(eloc);
    if (model_.arrays[array].relaxed && a.write) a.additive = true;  // add() is the only write
    model_.accesses.push_back(std::move(a));
    out_->access_locs.push_back(eloc);
    out_->access_via.push_back(call_stack_.empty() ? SourceLocation()
                                                   : sm_.getExpansionLoc(call_stack_.front()));
  }

  // ---- values --------------------------------------------------------------------------------

  const Value* Lookup(const Decl* d) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
      auto f = it->find(d);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }

  // True unless every use of the pointer `vd` in `s` only reads its value (an lvalue-to-rvalue
  // conversion, or a lambda capture whose body is checked too). Assignments, ++, &p, binding to a
  // reference or passing by reference all count as "may be re-pointed".
  static bool IsReassigned(const VarDecl* vd, const Stmt* s, const Stmt* parent = nullptr) {
    if (s == nullptr) return false;
    if (const auto* dre = dyn_cast<DeclRefExpr>(s); dre != nullptr && dre->getDecl() == vd) {
      if (parent != nullptr && isa<LambdaExpr>(parent)) return false;
      const auto* ice = dyn_cast_or_null<ImplicitCastExpr>(parent);
      return ice == nullptr || ice->getCastKind() != CK_LValueToRValue;
    }
    for (const Stmt* c : s->children()) {
      if (IsReassigned(vd, c, s)) return true;
    }
    return false;
  }

  bool IsMutatedInScope(const VarDecl* vd) {
    for (const Stmt* scope : mutation_scopes_) {
      if (MutatedIn(scope, vd)) return true;
    }
    return false;
  }

  // How a variable is used in a statement: only read, certainly written (assigned, ++/--), or
  // something in between (passed or bound by reference, ...), which needs Clang's analysis.
  enum class Uses { kReadOnly, kWritten, kUnclear };

  static Uses ClassifyUses(const VarDecl* vd, const Stmt* s, const Stmt* parent = nullptr) {
    if (s == nullptr) return Uses::kReadOnly;
    if (const auto* dre = dyn_cast<DeclRefExpr>(s); dre != nullptr && dre->getDecl() == vd) {
      if (parent == nullptr) return Uses::kUnclear;
      if (isa<LambdaExpr>(parent)) return Uses::kReadOnly;  // a capture; the body is walked too
      if (const auto* ice = dyn_cast<ImplicitCastExpr>(parent)) {
        return ice->getCastKind() == CK_LValueToRValue ? Uses::kReadOnly : Uses::kUnclear;
      }
      if (const auto* bo = dyn_cast<BinaryOperator>(parent)) {
        if (bo->isAssignmentOp() && bo->getLHS() == s) return Uses::kWritten;
      }
      if (const auto* uo = dyn_cast<UnaryOperator>(parent)) {
        if (uo->isIncrementDecrementOp()) return Uses::kWritten;
      }
      return Uses::kUnclear;
    }
    Uses result = Uses::kReadOnly;
    for (const Stmt* c : s->children()) {
      Uses u = ClassifyUses(vd, c, s);
      if (u == Uses::kWritten) return u;
      if (u == Uses::kUnclear) result = u;
    }
    return result;
  }

  bool MutatedIn(const Stmt* scope, const VarDecl* vd) {
    auto key = std::make_pair(scope, vd);
    auto it = mutated_.find(key);
    if (it == mutated_.end()) {
      // Fast paths: plain reads only, or an assignment / ++ somewhere; only the cases in between
      // (passed by reference, bound to one, ...) need Clang's matcher-based analysis.
      bool m = false;
      switch (ClassifyUses(vd, scope)) {
        case Uses::kReadOnly:
          m = false;
          break;
        case Uses::kWritten:
          m = true;
          break;
        case Uses::kUnclear:
          m = Mutations(scope).isMutated(vd);
          break;
      }
      it = mutated_.emplace(key, m).first;
    }
    return it->second;
  }

  // One analyzer per scope: it memoizes its (matcher-based, not cheap) answers.
  ExprMutationAnalyzer& Mutations(const Stmt* scope) {
    auto& slot = mutation_analyzers_[scope];
    if (slot == nullptr) slot = std::make_unique<ExprMutationAnalyzer>(*scope, ctx_);
    return *slot;
  }

  // The symbolic value of an integer, Key, array, row view or element expression.
  Value Eval(const Expr* e, int depth = 0) {
    if (depth > 32) return {};
    e = Strip(e);
    const int n = model_.key_rank;
    if (const auto* dre = dyn_cast<DeclRefExpr>(e)) return EvalDeclRef(dre, depth);
    if (const auto* me = dyn_cast<MemberExpr>(e)) {
      // key.idx (then [i] below) or a DistArray data member.
      if (me->getMemberDecl()->getName() == "idx" &&
          Eval(me->getBase(), depth + 1).kind == Value::Kind::kKey) {
        Value v;
        v.kind = Value::Kind::kKey;
        return v;
      }
      if (IsArrayLike(Classify(me->getType())) && isa<FieldDecl>(me->getMemberDecl())) {
        const QualType ft = me->getMemberDecl()->getType();
        if (ft->isReferenceType() || ft->isPointerType()) {
          return Wildcard(me->getMemberDecl(), me->getBeginLoc());  // two fields may be one array
        }
        Value v;
        v.kind = Value::Kind::kArray;
        v.array = ArrayId(me->getMemberDecl());
        return v;
      }
      return {};
    }
    if (const auto* op = dyn_cast<CXXOperatorCallExpr>(e)) {
      if (op->getOperator() == OO_Subscript && op->getNumArgs() == 2) {
        Value base = Eval(op->getArg(0), depth + 1);
        if (base.kind == Value::Kind::kKey) {
          auto i = EvalConstInt(op->getArg(1), ctx_);
          if (i && *i >= 0 && *i < n) return Value::Int(Affine::KeyComponent(n, static_cast<int>(*i)));
          return {};
        }
        if (base.kind == Value::Kind::kArray) {
          base.prefix.push_back(EvalInt(op->getArg(1), depth + 1));
          return base;
        }
        return {};
      }
      if (op->getOperator() == OO_Call && op->getNumArgs() >= 1) {
        Value base = Eval(op->getArg(0), depth + 1);
        if (base.kind == Value::Kind::kArray && base.prefix.empty()) {
          for (unsigned i = 1; i < op->getNumArgs(); ++i) {
            base.prefix.push_back(EvalInt(op->getArg(i), depth + 1));
          }
          return base;
        }
      }
      return {};
    }
    if (const auto* mc = dyn_cast<CXXMemberCallExpr>(e)) {
      const CXXMethodDecl* md = mc->getMethodDecl();
      if (md == nullptr) return {};
      const Expr* obj = mc->getImplicitObjectArgument();
      if (obj == nullptr || !IsArrayLike(Classify(obj->getType()))) return {};
      StringRef name = md->getName();
      if (name == "row" && mc->getNumArgs() == 1) {
        Value base = Eval(obj, depth + 1);
        if (base.kind != Value::Kind::kArray) return {};
        base.prefix.push_back(EvalInt(mc->getArg(0), depth + 1));
        return base;
      }
      if ((name == "at" || name == "get") && mc->getNumArgs() == 1) {
        Value base = Eval(obj, depth + 1);
        if (base.kind != Value::Kind::kArray) return {};
        if (Eval(mc->getArg(0), depth + 1).kind == Value::Kind::kKey) {
          for (int i = 0; i < n; ++i) base.prefix.push_back(Affine::KeyComponent(n, i));
        } else {
          base.prefix.resize(model_.arrays[base.array].rank, Affine::Unknown());
        }
        return base;
      }
      if (name == "value_at" && mc->getNumArgs() == 1) {
        Value base = Eval(obj, depth + 1);
        if (base.kind != Value::Kind::kArray) return {};
        base.prefix.resize(model_.arrays[base.array].rank, Affine::Unknown());
        return base;
      }
      return {};
    }
    if (const auto* ue = dyn_cast<UnaryOperator>(e)) {
      switch (ue->getOpcode()) {
        case UO_Minus:
          return Value::Int(-EvalInt(ue->getSubExpr(), depth + 1));
        case UO_Plus:
          return Value::Int(EvalInt(ue->getSubExpr(), depth + 1));
        case UO_AddrOf:
          // &W names W (as an argument for a helper's or unknown function's pointer parameter).
          if (IsArrayLike(Classify(ue->getSubExpr()->getType()))) {
            return Eval(ue->getSubExpr(), depth + 1);
          }
          break;
        case UO_Deref:
          // *p with p a pointer to an array: what p names (EvalDeclRef follows `p = &W` when p is
          // never re-pointed, and makes it a wildcard otherwise).
          if (IsArrayLike(Classify(ue->getType()))) return Eval(ue->getSubExpr(), depth + 1);
          break;
        default:
          break;
      }
    }
    if (const auto* bo = dyn_cast<BinaryOperator>(e)) {
      if (bo->getType()->isIntegerType()) {
        switch (bo->getOpcode()) {
          case BO_Add:
            return Value::Int(EvalInt(bo->getLHS(), depth + 1) + EvalInt(bo->getRHS(), depth + 1));
          case BO_Sub:
            return Value::Int(EvalInt(bo->getLHS(), depth + 1) - EvalInt(bo->getRHS(), depth + 1));
          case BO_Mul: {
            Affine l = EvalInt(bo->getLHS(), depth + 1);
            Affine r = EvalInt(bo->getRHS(), depth + 1);
            if (l.IsConstant()) return Value::Int(r.Scaled(l.constant()));
            if (r.IsConstant()) return Value::Int(l.Scaled(r.constant()));
            return {};
          }
          case BO_Comma:
            return Eval(bo->getRHS(), depth + 1);
          default:
            break;
        }
      }
    }
    if (e->getType()->isIntegralOrEnumerationType()) {
      if (auto c = EvalConstInt(e, ctx_)) return Value::Int(Affine::Constant(n, *c));
    }
    if (const auto* co = dyn_cast<AbstractConditionalOperator>(e)) {
      const TypeKind tk = Classify(e->getType());
      if (tk == TypeKind::kDistArray || tk == TypeKind::kRelaxedArray) {
        // `c ? W : H`: one of the branches' arrays, known as a set.
        std::vector<int> candidates;
        for (const Expr* branch : {co->getTrueExpr(), co->getFalseExpr()}) {
          Value b = Eval(branch, depth + 1);
          if (b.kind != Value::Kind::kArray || !b.prefix.empty()) {
            candidates.clear();
            break;
          }
          auto nested = wildcard_candidates_.find(b.array);
          if (model_.arrays[b.array].may_alias && nested == wildcard_candidates_.end()) {
            candidates.clear();  // a branch that may be anything
            break;
          }
          if (nested != wildcard_candidates_.end()) {
            candidates.insert(candidates.end(), nested->second.begin(), nested->second.end());
          } else {
            candidates.push_back(b.array);
          }
        }
        std::sort(candidates.begin(), candidates.end());
        candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
        if (candidates.size() == 1) {
          Value v;
          v.kind = Value::Kind::kArray;
          v.array = candidates[0];
          return v;
        }
        if (!candidates.empty()) {
          const ValueDecl* named = wildcard_name_;
          return WildcardFor(named != nullptr ? static_cast<const void*>(named) : e,
                             named != nullptr ? named->getNameAsString()
                                              : "expression at line " +
                                                    std::to_string(sm_.getExpansionLineNumber(
                                                        e->getBeginLoc())),
                             e->getType(), e->getBeginLoc(), &candidates);
        }
      }
    }
    // Never drop an array: whatever denotes one but could not be followed is a wildcard.
    if (IsArrayLike(Classify(e->getType()))) return WildcardExpr(e);
    return {};
  }

  Affine EvalInt(const Expr* e, int depth = 0) {
    Value v = Eval(e, depth);
    if (v.kind == Value::Kind::kInt) return v.affine;
    if (e->getType()->isIntegralOrEnumerationType()) {
      if (auto c = EvalConstInt(e, ctx_)) return Affine::Constant(model_.key_rank, *c);
    }
    return Affine::Unknown();
  }

  Value EvalDeclRef(const DeclRefExpr* dre, int depth) {
    const ValueDecl* d = dre->getDecl();
    if (const Value* bound = Lookup(d)) return *bound;
    const TypeKind kind = Classify(d->getType());
    const auto* vd = dyn_cast<VarDecl>(d);
    if (kind == TypeKind::kKey) {
      // A Key that is not the loop's: a different iteration space, unknown.
      return {};
    }
    if (IsArrayLike(kind) && vd != nullptr && d->getType()->isPointerType()) {
      // DistArray* p = &W (never re-pointed): p names W. Anything else: unknown.
      const Stmt* fn_body = enclosing_ != nullptr ? enclosing_->getBody() : nullptr;
      if (vd->hasInit() && !IsReassigned(vd, fn_body) && !IsReassigned(vd, lambda_body_)) {
        if (const auto* addr = dyn_cast<UnaryOperator>(Strip(vd->getInit()));
            addr != nullptr && addr->getOpcode() == UO_AddrOf) {
          Value v = Eval(addr->getSubExpr(), depth + 1);
          if (v.kind == Value::Kind::kArray) return v;
        }
      }
      return Wildcard(vd, dre->getBeginLoc());
    }
    if (IsArrayLike(kind) && vd != nullptr) {
      // A variable declared outside the body: the array itself, or a reference to one.
      if (d->getType()->isReferenceType()) {
        if (const auto* parm = dyn_cast<ParmVarDecl>(vd)) {
          Value v;
          v.kind = Value::Kind::kArray;
          v.array = ArrayId(parm);
          param_arrays_.insert(parm);
          return v;
        }
        if (vd->hasInit()) {
          const ValueDecl* saved = wildcard_name_;
          wildcard_name_ = vd;  // an unresolvable initializer is reported under this name
          const size_t before = model_.arrays.size();
          Value v = Eval(vd->getInit(), depth + 1);
          wildcard_name_ = saved;
          // `auto& ratings = loaded->train;`: the program calls it `ratings`, so does tessc.
          if (v.kind == Value::Kind::kArray && isa<MemberExpr>(Strip(vd->getInit())) &&
              model_.arrays.size() == before + 1 && v.array == static_cast<int>(before)) {
            model_.arrays[v.array].name = vd->getNameAsString();
          }
          if (v.kind == Value::Kind::kArray) return v;
        }
        return Wildcard(vd, dre->getBeginLoc());
      }
      if (kind == TypeKind::kDistArray || kind == TypeKind::kRelaxedArray) {
        Value v;
        v.kind = Value::Kind::kArray;
        v.array = ArrayId(vd);
        return v;
      }
      // A row view declared outside the body.
      if (vd->hasInit()) {
        Value v = Eval(vd->getInit(), depth + 1);
        if (v.kind == Value::Kind::kArray) return v;
      }
      return Wildcard(vd, dre->getBeginLoc());
    }
    if (vd != nullptr && d->getType()->isIntegralOrEnumerationType()) {
      if (d->getType().isConstQualified() && vd->hasInit()) {
        if (auto c = EvalConstInt(vd->getInit(), ctx_)) {
          return Value::Int(Affine::Constant(model_.key_rank, *c));
        }
      }
      // A variable of the function that calls parallel_for (or a global), never modified by the
      // body: a loop-invariant symbol. Locals and parameters of walked helpers are not: their
      // values may differ per iteration (a helper's parameter fed from data, say).
      const bool outer = !vd->isLocalVarDeclOrParm() ||
                         (enclosing_ != nullptr &&
                          vd->getParentFunctionOrMethod() == static_cast<const DeclContext*>(enclosing_));
      if (outer && !IsInside(vd, lambda_body_) && !IsMutatedInScope(vd)) {
        unsigned offset = sm_.getFileOffset(sm_.getExpansionLoc(vd->getLocation()));
        return Value::Int(Affine::Symbol(model_.key_rank,
                                         vd->getNameAsString() + "@" + std::to_string(offset)));
      }
    }
    return {};
  }

  bool IsInside(const Decl* d, const Stmt* s) const {
    if (s == nullptr) return false;
    SourceRange r = s->getSourceRange();
    SourceLocation l = d->getLocation();
    return !sm_.isBeforeInTranslationUnit(l, r.getBegin()) &&
           !sm_.isBeforeInTranslationUnit(r.getEnd(), l);
  }

  // An array-typed name whose target tessc cannot determine: it may be any array of its type.
  Value Wildcard(const ValueDecl* vd, SourceLocation loc) {
    return WildcardFor(vd, vd->getNameAsString(), vd->getType(), loc);
  }

  // Same for an expression (a function returning a reference, a conditional, a container
  // element, ...). Keyed by the expression, so each such expression is its own unknown array.
  Value WildcardExpr(const Expr* e) {
    if (wildcard_name_ != nullptr) return Wildcard(wildcard_name_, e->getBeginLoc());
    std::string text = "expression at line " +
                       std::to_string(sm_.getExpansionLineNumber(e->getBeginLoc()));
    return WildcardFor(e, text, e->getType(), e->getBeginLoc());
  }

  // `candidates`: the arrays the name may denote when tessc knows them (`c ? W : H`); null means
  // any array of its element type and rank.
  Value WildcardFor(const void* key, const std::string& name, QualType type, SourceLocation loc,
                    const std::vector<int>* candidates = nullptr) {
    Value v;
    v.kind = Value::Kind::kArray;
    const TypeKind tk = Classify(type);
    auto it = wildcard_ids_.find(key);
    if (it != wildcard_ids_.end()) {
      v.array = it->second;
      if (tk == TypeKind::kRowView || tk == TypeKind::kRelaxedRowView) {
        v.prefix.push_back(Affine::Unknown());
      }
      return v;
    }
    v.array = NewArray(name, type, nullptr);
    model_.arrays[v.array].may_alias = true;
    wildcard_ids_[key] = v.array;
    if (tk == TypeKind::kRowView || tk == TypeKind::kRelaxedRowView) {
      v.prefix.push_back(Affine::Unknown());  // some row
    }
    if (candidates != nullptr) {
      wildcard_candidates_[v.array] = *candidates;
      std::string names;
      for (size_t i = 0; i < candidates->size(); ++i) {
        names += (i == 0 ? "" : i + 1 == candidates->size() ? " or " : ", ");
        names += "'" + model_.arrays[(*candidates)[i]].name + "'";
      }
      Note(loc, "'" + name + "' may name " + names +
                    " (chosen at run time); its accesses are counted against each of them");
    } else {
      Note(loc, "'" + name +
                    "' may name any array of its type (tessc cannot see which); its accesses are "
                    "counted against each of them");
    }
    return v;
  }

  // Each access through a wildcard name is also an access to every array it may denote.
  void ExpandWildcards() {
    const size_t original = model_.accesses.size();
    for (const auto& [decl, wid] : wildcard_ids_) {
      auto cand = wildcard_candidates_.find(wid);
      for (size_t i = 0; i < original; ++i) {
        if (model_.accesses[i].array != wid) continue;
        for (int other = 0; other < static_cast<int>(model_.arrays.size()); ++other) {
          if (other == wid || array_sigs_[other] != array_sigs_[wid]) continue;
          if (cand != wildcard_candidates_.end() &&
              std::find(cand->second.begin(), cand->second.end(), other) == cand->second.end()) {
            continue;
          }
          Duplicate(i, other, "may alias '" + model_.arrays[wid].name + "'");
        }
      }
    }
  }

  // Reference parameters of the function that contains the loop are distinct arrays only if every
  // call in this translation unit passes distinct arrays; otherwise they may be one array.
  void ExpandParameterAliases() {
    std::vector<const ParmVarDecl*> params(param_arrays_.begin(), param_arrays_.end());
    const size_t original = model_.accesses.size();
    for (size_t a = 0; a < params.size(); ++a) {
      for (size_t b = a + 1; b < params.size(); ++b) {
        int ia = ArrayId(params[a]);
        int ib = ArrayId(params[b]);
        if (array_sigs_[ia] != array_sigs_[ib]) continue;
        std::string why;
        if (!ParamsDistinct(params[a], params[b], &why)) {
          Note(params[b]->getLocation(), "'" + params[a]->getNameAsString() + "' and '" +
                                             params[b]->getNameAsString() +
                                             "' may name the same array (" + why +
                                             "); their accesses are counted against both");
          for (size_t i = 0; i < original; ++i) {
            if (model_.accesses[i].array == ia) Duplicate(i, ib, "may alias '" + params[a]->getNameAsString() + "'");
            if (model_.accesses[i].array == ib) Duplicate(i, ia, "may alias '" + params[b]->getNameAsString() + "'");
          }
        }
      }
    }
  }

  bool ParamsDistinct(const ParmVarDecl* a, const ParmVarDecl* b, std::string* why) {
    const auto* fn = dyn_cast<FunctionDecl>(a->getDeclContext());
    if (fn == nullptr || fn != enclosing_) {
      *why = "not parameters of the enclosing function";
      return false;
    }
    auto it = calls_.find(fn->getCanonicalDecl());
    if (it == calls_.end() || it->second.empty()) {
      *why = "'" + fn->getNameAsString() + "' is not called in this translation unit";
      return false;
    }
    for (const CallExpr* call : it->second) {
      unsigned ia = a->getFunctionScopeIndex();
      unsigned ib = b->getFunctionScopeIndex();
      if (ia >= call->getNumArgs() || ib >= call->getNumArgs()) return false;
      const auto* da = dyn_cast<DeclRefExpr>(Strip(call->getArg(ia)));
      const auto* db = dyn_cast<DeclRefExpr>(Strip(call->getArg(ib)));
      if (da == nullptr || db == nullptr || da->getDecl()->getType()->isReferenceType() ||
          db->getDecl()->getType()->isReferenceType()) {
        *why = "a call passes arguments tessc cannot follow";
        return false;
      }
      if (da->getDecl()->getCanonicalDecl() == db->getDecl()->getCanonicalDecl()) {
        *why = "a call passes the same array twice";
        return false;
      }
    }
    return true;
  }

  void Duplicate(size_t access, int array, const std::string& reason) {
    Access copy = model_.accesses[access];
    copy.array = array;
    copy.conservative_reason = reason;
    copy.alias_copy = true;
    copy.subscripts.resize(model_.arrays[array].rank, Affine::Unknown());
    model_.accesses.push_back(copy);
    out_->access_locs.push_back(out_->access_locs[access]);
    out_->access_via.push_back(out_->access_via[access]);
  }

  // ---- the walk ------------------------------------------------------------------------------

  // If `e` denotes one array element, records it with `use` and returns true.
  bool VisitElement(const Expr* e, Use use) {
    const Expr* s = Strip(e);
    const bool candidate = isa<DeclRefExpr>(s) || isa<CXXOperatorCallExpr>(s) ||
                           isa<CXXMemberCallExpr>(s) || isa<UnaryOperator>(s);
    if (!candidate) return false;
    if (const auto* op = dyn_cast<CXXOperatorCallExpr>(s)) {
      if (op->getOperator() != OO_Call && op->getOperator() != OO_Subscript) return false;
    }
    if (const auto* mc = dyn_cast<CXXMemberCallExpr>(s)) {
      const CXXMethodDecl* md = mc->getMethodDecl();
      if (md == nullptr) return false;
      StringRef name = md->getName();
      if (name != "at" && name != "get" && name != "value_at") return false;
    }
    if (const auto* uo = dyn_cast<UnaryOperator>(s)) {
      if (uo->getOpcode() != UO_Deref) return false;
    }
    Value v = Eval(s);
    if (v.kind != Value::Kind::kArray) return false;
    if (static_cast<int>(v.prefix.size()) < model_.arrays[v.array].rank) return false;
    // `get` never writes and reads return by value for relaxed arrays.
    if (model_.arrays[v.array].relaxed && use != Use::kNone) use = Use::kRead;
    AddAccess(v.array, v.prefix, use, s->getBeginLoc(), "");
    VisitIndexArguments(s);
    return true;
  }

  // Subscript expressions may read arrays themselves (A(idx(key[0]))).
  void VisitIndexArguments(const Expr* s) {
    if (const auto* op = dyn_cast<CXXOperatorCallExpr>(s)) {
      VisitObjectChain(op->getArg(0));
      for (unsigned i = 1; i < op->getNumArgs(); ++i) Visit(op->getArg(i), Use::kRead);
    } else if (const auto* mc = dyn_cast<CXXMemberCallExpr>(s)) {
      VisitObjectChain(mc->getImplicitObjectArgument());
      for (const Expr* a : mc->arguments()) Visit(a, Use::kRead);
    }
  }

  // The object part of W.row(i)[j]: visit the subscripts inside it, not the view itself.
  void VisitObjectChain(const Expr* obj) {
    if (obj == nullptr) return;
    const Expr* s = Strip(obj);
    if (const auto* mc = dyn_cast<CXXMemberCallExpr>(s)) {
      VisitObjectChain(mc->getImplicitObjectArgument());
      for (const Expr* a : mc->arguments()) Visit(a, Use::kRead);
    }
  }

  void Visit(const Stmt* st, Use use) {
    if (st == nullptr) return;
    if (const auto* e = dyn_cast<Expr>(st)) {
      VisitExpr(e, use);
      return;
    }
    if (const auto* ds = dyn_cast<DeclStmt>(st)) {
      for (const Decl* d : ds->decls()) {
        if (const auto* vd = dyn_cast<VarDecl>(d)) VisitVarDecl(vd);
      }
      return;
    }
    if (const auto* fr = dyn_cast<CXXForRangeStmt>(st)) {
      VisitRangeFor(fr);
      return;
    }
    // `#pragma omp simd` and friends wrap the loop in a CapturedStmt, whose children() are only
    // the captured variables: walk the captured statement itself.
    if (const auto* omp = dyn_cast<OMPExecutableDirective>(st)) {
      if (omp->hasAssociatedStmt()) Visit(omp->getAssociatedStmt(), Use::kNone);
      return;
    }
    if (const auto* cs = dyn_cast<CapturedStmt>(st)) {
      Visit(cs->getCapturedStmt(), Use::kNone);
      return;
    }
    for (const Stmt* child : st->children()) Visit(child, Use::kRead);
  }

  void VisitVarDecl(const VarDecl* vd) {
    if (!vd->hasInit()) return;
    const Expr* init = vd->getInit();
    QualType t = vd->getType();
    if (const auto* lambda = dyn_cast<LambdaExpr>(Strip(init))) {
      Value v;
      v.kind = Value::Kind::kLambda;
      v.lambda_call = lambda->getCallOperator();
      frames_.back()[vd] = v;
      Visit(lambda, Use::kNone);  // its init-captures
      return;
    }
    Value v = Eval(init);
    const TypeKind kind = Classify(t);
    if (v.kind == Value::Kind::kArray &&
        (t->isReferenceType() || kind == TypeKind::kRowView || kind == TypeKind::kRelaxedRowView)) {
      // A reference or view: accesses happen where it is used.
      frames_.back()[vd] = v;
      VisitIndexArgumentsOf(init);
      return;
    }
    if (t->isPointerType()) {
      Visit(init, Use::kRead);  // &A(..) / w.data() are recorded as escapes there
      return;
    }
    if (IsArrayLike(kind) && t->isReferenceType()) {
      frames_.back()[vd] = Wildcard(vd, vd->getLocation());
      return;
    }
    if (kind == TypeKind::kKey && v.kind == Value::Kind::kKey) {
      frames_.back()[vd] = v;
      return;
    }
    Visit(init, Use::kRead);
    if (v.kind == Value::Kind::kInt && !IsMutatedInScope(vd)) frames_.back()[vd] = v;
  }

  void VisitIndexArgumentsOf(const Expr* init) {
    const Expr* s = Strip(init);
    VisitIndexArguments(s);
  }

  void VisitRangeFor(const CXXForRangeStmt* fr) {
    const VarDecl* loop_var = fr->getLoopVariable();
    Value range = Eval(fr->getRangeInit());
    if (range.kind == Value::Kind::kArray) {
      VisitIndexArgumentsOf(fr->getRangeInit());
      const int rank = model_.arrays[range.array].rank;
      range.prefix.resize(rank, Affine::Unknown());
      if (loop_var->getType()->isReferenceType()) {
        frames_.back()[loop_var] = range;
      } else {
        AddAccess(range.array, range.prefix, Use::kRead, fr->getRangeInit()->getBeginLoc(), "");
      }
    } else {
      Visit(fr->getRangeInit(), Use::kRead);
    }
    Visit(fr->getBody(), Use::kNone);
  }

  void VisitExpr(const Expr* e, Use use) {
    e = e->IgnoreParens();
    if (VisitElement(e, use)) return;
    if (const auto* ice = dyn_cast<ImplicitCastExpr>(e)) {
      Visit(ice->getSubExpr(), use == Use::kNone ? Use::kRead : use);
      return;
    }
    if (const auto* cao = dyn_cast<CompoundAssignOperator>(e)) {
      const BinaryOperatorKind op = cao->getOpcode();
      Visit(cao->getLHS(), op == BO_AddAssign || op == BO_SubAssign ? Use::kAdd : Use::kUpdate);
      Visit(cao->getRHS(), Use::kRead);
      return;
    }
    if (const auto* bo = dyn_cast<BinaryOperator>(e)) {
      if (bo->getOpcode() == BO_Assign) {
        Visit(bo->getLHS(), Use::kWrite);
        Visit(bo->getRHS(), Use::kRead);
        return;
      }
      if (bo->getOpcode() == BO_Comma) {
        Visit(bo->getLHS(), Use::kNone);
        Visit(bo->getRHS(), use);
        return;
      }
      Visit(bo->getLHS(), Use::kRead);
      Visit(bo->getRHS(), Use::kRead);
      return;
    }
    if (const auto* uo = dyn_cast<UnaryOperator>(e)) {
      if (uo->isIncrementDecrementOp()) {
        Visit(uo->getSubExpr(), Use::kAdd);
        return;
      }
      if (uo->getOpcode() == UO_AddrOf) {
        VisitEscape(uo->getSubExpr(), uo->getBeginLoc(), "its address is taken");
        return;
      }
      Visit(uo->getSubExpr(), Use::kRead);
      return;
    }
    if (const auto* lambda = dyn_cast<LambdaExpr>(e)) {
      // The body is walked where the lambda is called; init-captures are evaluated here.
      for (const Expr* init : lambda->capture_inits()) {
        if (init != nullptr) Visit(init, Use::kRead);
      }
      return;
    }
    if (const auto* co = dyn_cast<AbstractConditionalOperator>(e)) {
      // `(c ? A(i) : B(j)) = x` writes whichever branch is taken.
      Visit(co->getCond(), Use::kRead);
      Visit(co->getTrueExpr(), use);
      Visit(co->getFalseExpr(), use);
      return;
    }
    if (const auto* op = dyn_cast<CXXOperatorCallExpr>(e)) {
      VisitOperatorCall(op, use);
      return;
    }
    if (const auto* call = dyn_cast<CallExpr>(e)) {
      VisitCall(call);
      return;
    }
    for (const Stmt* child : e->children()) Visit(child, Use::kRead);
  }

  // Something hands out a pointer to the array (or it goes where tessc cannot follow).
  void VisitEscape(const Expr* e, SourceLocation loc, const std::string& why) {
    Value v = Eval(e);
    if (v.kind == Value::Kind::kArray) {
      const std::string name = model_.arrays[v.array].name;
      const std::string text = "a pointer into '" + name + "' escapes (" + why +
                               "); assuming any element of '" + name + "' is read and written";
      Note(loc, text);
      AddAccess(v.array, {}, Use::kEscape, loc, text);
      VisitIndexArgumentsOf(e);
      return;
    }
    Visit(e, Use::kRead);
  }

  void VisitOperatorCall(const CXXOperatorCallExpr* op, Use use) {
    const OverloadedOperatorKind k = op->getOperator();
    const auto* md = dyn_cast_or_null<CXXMethodDecl>(op->getDirectCallee());
    // A local lambda called as helper(...).
    if (k == OO_Call && md != nullptr && md->getParent()->isLambda()) {
      Inline(md, op, /*first_arg=*/1);
      return;
    }
    // Overloaded assignment on an element of class type behaves like the builtin one.
    if (op->getNumArgs() == 2 && (k == OO_Equal || k == OO_PlusEqual || k == OO_MinusEqual ||
                                  k == OO_StarEqual || k == OO_SlashEqual)) {
      Value lhs = Eval(op->getArg(0));
      if (lhs.kind == Value::Kind::kArray) {
        Visit(op->getArg(0), k == OO_Equal ? Use::kWrite
                             : (k == OO_PlusEqual || k == OO_MinusEqual) ? Use::kAdd
                                                                         : Use::kUpdate);
        Visit(op->getArg(1), Use::kRead);
        return;
      }
    }
    VisitCall(op);
  }

  void VisitCall(const CallExpr* call) {
    const FunctionDecl* fd = call->getDirectCallee();
    // Relaxed tables: add() is the additive write.
    if (const auto* mc = dyn_cast<CXXMemberCallExpr>(call)) {
      const Expr* obj = mc->getImplicitObjectArgument();
      const TypeKind ok = obj != nullptr ? Classify(obj->getType()) : TypeKind::kOther;
      if (IsArrayLike(ok) && fd != nullptr) {
        VisitArrayMethod(mc, ok);
        return;
      }
    }
    if (fd == nullptr) {
      VisitUnknownCall(call, nullptr, 0);
      return;
    }
    const FunctionDecl* def = nullptr;
    const Stmt* body = fd->getBody(def);
    const bool in_system = sm_.isInSystemHeader(fd->getLocation());
    const auto* method = dyn_cast<CXXMethodDecl>(fd);
    const unsigned first = isa<CXXOperatorCallExpr>(call) && method != nullptr ? 1 : 0;
    // The object of a member call: an array element it is called on is updated unless the method
    // is const.
    const Use object_use = method != nullptr && !method->isConst() && !method->isStatic()
                               ? Use::kUpdate
                               : Use::kRead;
    if (const auto* mc = dyn_cast<CXXMemberCallExpr>(call)) {
      Visit(mc->getImplicitObjectArgument(), object_use);
    } else if (first == 1) {
      Visit(call->getArg(0), object_use);
    }
    // Functions and methods defined in this translation unit (outside system headers and the
    // programming model itself) are walked with their parameters bound; members they reach
    // through `this` resolve like any other member.
    if (body != nullptr && !in_system && !InTesseraNamespace(fd)) {
      Inline(def, call, first);
      return;
    }
    VisitUnknownCall(call, fd, first);
  }

  void VisitArrayMethod(const CXXMemberCallExpr* mc, TypeKind kind) {
    StringRef name = mc->getMethodDecl()->getName();
    const Expr* obj = mc->getImplicitObjectArgument();
    if (name == "add" && (kind == TypeKind::kRelaxedArray || kind == TypeKind::kRelaxedRowView)) {
      Value base = Eval(obj);
      const unsigned n_index = mc->getNumArgs() - 1;
      if (base.kind == Value::Kind::kArray) {
        if (n_index == 1 && Eval(mc->getArg(0)).kind == Value::Kind::kKey) {
          for (int i = 0; i < model_.key_rank; ++i) {
            base.prefix.push_back(Affine::KeyComponent(model_.key_rank, i));
          }
        } else {
          for (unsigned i = 0; i < n_index; ++i) base.prefix.push_back(EvalInt(mc->getArg(i)));
        }
        AddAccess(base.array, base.prefix, Use::kAdd, mc->getBeginLoc(), "");
      }
      VisitObjectChain(obj);
      for (const Expr* a : mc->arguments()) Visit(a, Use::kRead);
      return;
    }
    if (name == "data" || name == "begin" || name == "end") {
      VisitEscape(obj, mc->getBeginLoc(), "'" + name.str() + "()' is called");
      return;
    }
    // size(), extent(), shape(), row() used as a value, ...: no element access of its own.
    VisitObjectChain(obj);
    for (const Expr* a : mc->arguments()) Visit(a, Use::kRead);
  }

  // A function tessc cannot look into: elements passed by non-const reference are updated in
  // place; arrays and views passed are read (const) or read and written (otherwise) anywhere.
  void VisitUnknownCall(const CallExpr* call, const FunctionDecl* fd, unsigned first) {
    const std::string fname = fd != nullptr ? fd->getQualifiedNameAsString() : "an indirect call";
    for (unsigned i = first; i < call->getNumArgs(); ++i) {
      const Expr* arg = call->getArg(i);
      if (isa<CXXDefaultArgExpr>(arg)) continue;
      QualType pt;
      if (fd != nullptr && i - first < fd->getNumParams()) pt = fd->getParamDecl(i - first)->getType();
      const bool mutable_param =
          !pt.isNull() && ((pt->isReferenceType() && !pt.getNonReferenceType().isConstQualified()) ||
                           (pt->isPointerType() && !pt->getPointeeType().isConstQualified()));
      Value v = Eval(arg);
      if (v.kind == Value::Kind::kLambda || isa<LambdaExpr>(Strip(arg))) {
        // A callback handed to code tessc cannot see may run any number of times: walk its body
        // once with its parameters unbound.
        const CXXMethodDecl* op = v.kind == Value::Kind::kLambda
                                      ? v.lambda_call
                                      : cast<LambdaExpr>(Strip(arg))->getCallOperator();
        WalkCallback(op);
        continue;
      }
      if (v.kind == Value::Kind::kArray) {
        const int rank = model_.arrays[v.array].rank;
        if (static_cast<int>(v.prefix.size()) >= rank) {
          VisitElement(arg, mutable_param ? Use::kUpdate : Use::kRead);
          continue;
        }
        const std::string name = model_.arrays[v.array].name;
        const std::string text = "'" + name + "' is passed to " + fname +
                                 ", whose body tessc cannot see; assuming it " +
                                 (mutable_param || pt.isNull() ? "reads and writes" : "reads") +
                                 " any element";
        Note(arg->getBeginLoc(), text);
        AddAccess(v.array, {}, mutable_param || pt.isNull() ? Use::kEscape : Use::kRead,
                  arg->getBeginLoc(), text);
        if (!mutable_param && !pt.isNull()) {
          // Reads anywhere: make every subscript unknown.
          Access& a = model_.accesses.back();
          for (Affine& s : a.subscripts) s = Affine::Unknown();
        }
        VisitIndexArgumentsOf(arg);
        continue;
      }
      Visit(arg, Use::kRead);
    }
  }

  void WalkCallback(const CXXMethodDecl* op) {
    if (op == nullptr) return;
    if (const FunctionTemplateDecl* ft = op->getDescribedFunctionTemplate()) {
      // A generic lambda: its instantiations are what runs.
      for (const FunctionDecl* spec : ft->specializations()) {
        if (const auto* m = dyn_cast<CXXMethodDecl>(spec)) WalkCallback(m);
      }
      return;
    }
    const Stmt* body = op->getBody();
    if (body == nullptr || inline_stack_.count(op) != 0) return;
    inline_stack_.insert(op);
    frames_.emplace_back();
    mutation_scopes_.push_back(body);
    Visit(body, Use::kNone);
    mutation_scopes_.pop_back();
    frames_.pop_back();
    inline_stack_.erase(op);
  }

  // Walks a helper's body with its parameters bound to the call's arguments.
  void Inline(const FunctionDecl* fd, const CallExpr* call, unsigned first) {
    const Stmt* body = fd != nullptr ? fd->getBody() : nullptr;
    if (body == nullptr || inline_stack_.count(fd) != 0 ||
        static_cast<int>(inline_stack_.size()) >= kMaxInlineDepth) {
      VisitUnknownCall(call, fd, first);
      return;
    }
    Frame frame;
    for (unsigned i = first; i < call->getNumArgs(); ++i) {
      if (i - first >= fd->getNumParams()) {
        Visit(call->getArg(i), Use::kRead);
        continue;
      }
      const ParmVarDecl* p = fd->getParamDecl(i - first);
      const Expr* arg = call->getArg(i);
      Value v = Eval(arg);
      QualType pt = p->getType();
      const TypeKind pk = Classify(pt);
      if (v.kind == Value::Kind::kArray &&
          (pt->isReferenceType() || pk == TypeKind::kRowView || pk == TypeKind::kRelaxedRowView)) {
        frame[p] = v;  // the callee accesses through it
        VisitIndexArgumentsOf(arg);
        continue;
      }
      if (v.kind == Value::Kind::kKey) {
        frame[p] = v;
        continue;
      }
      if (v.kind == Value::Kind::kLambda) {
        frame[p] = v;
        continue;
      }
      Visit(arg, Use::kRead);
      if (v.kind == Value::Kind::kInt) frame[p] = v;
    }
    // Parameters the helper modifies are not stable values.
    for (auto& [decl, value] : frame) {
      if (value.kind == Value::Kind::kInt && MutatedIn(body, cast<VarDecl>(decl))) value = Value();
    }
    inline_stack_.insert(fd);
    call_stack_.push_back(call->getBeginLoc());
    frames_.push_back(std::move(frame));
    mutation_scopes_.push_back(body);
    Visit(body, Use::kNone);
    mutation_scopes_.pop_back();
    frames_.pop_back();
    call_stack_.pop_back();
    inline_stack_.erase(fd);
  }

  ASTContext& ctx_;
  SourceManager& sm_;
  const CallIndex& calls_;
  CollectedSite* out_;
  SiteModel& model_;
  const FunctionDecl* enclosing_ = nullptr;
  const Stmt* lambda_body_ = nullptr;
  std::vector<Frame> frames_;
  std::vector<const Stmt*> mutation_scopes_;
  std::map<const Stmt*, std::unique_ptr<ExprMutationAnalyzer>> mutation_analyzers_;
  std::map<std::pair<const Stmt*, const VarDecl*>, bool> mutated_;
  std::set<const FunctionDecl*> inline_stack_;
  std::vector<SourceLocation> call_stack_;  // calls being walked, outermost first
  std::map<const ValueDecl*, int> array_ids_;
  std::vector<std::string> array_sigs_;
  std::map<const void*, int> wildcard_ids_;
  std::map<int, std::vector<int>> wildcard_candidates_;
  const ValueDecl* wildcard_name_ = nullptr;
  std::set<const ParmVarDecl*> param_arrays_;
};

const LambdaExpr* FindLambda(const Expr* e) {
  e = Strip(e);
  if (const auto* l = dyn_cast<LambdaExpr>(e)) return l;
  if (const auto* dre = dyn_cast<DeclRefExpr>(e)) {
    if (const auto* vd = dyn_cast<VarDecl>(dre->getDecl())) {
      if (vd->hasInit()) return dyn_cast<LambdaExpr>(Strip(vd->getInit()));
    }
  }
  return nullptr;
}

std::optional<int> PermissionStaleness(ASTContext& ctx, const Expr* arg, bool* known) {
  *known = true;
  const Expr* e = Strip(arg);
  if (const auto* dre = dyn_cast<DeclRefExpr>(e)) {
    if (const auto* vd = dyn_cast<VarDecl>(dre->getDecl()); vd && vd->hasInit()) e = Strip(vd->getInit());
  }
  if (const auto* il = dyn_cast<InitListExpr>(e)) {
    if (il->getNumInits() == 0) return 0;
    if (auto v = EvalConstInt(il->getInit(0), ctx)) return static_cast<int>(*v);
  }
  if (const auto* ce = dyn_cast<CXXConstructExpr>(e); ce && ce->getNumArgs() == 0) return 0;
  Expr::EvalResult r;
  if (!e->isValueDependent() && e->EvaluateAsRValue(r, ctx) && r.Val.isStruct() &&
      r.Val.getStructNumFields() >= 1 && r.Val.getStructField(0).isInt()) {
    return static_cast<int>(r.Val.getStructField(0).getInt().getExtValue());
  }
  *known = false;
  return 0;
}

}  // namespace

bool IsParallelForCall(const CallExpr* call) {
  const FunctionDecl* fd = call->getDirectCallee();
  if (fd == nullptr || fd->getName() != "parallel_for") return false;
  const auto* ns = dyn_cast<NamespaceDecl>(fd->getDeclContext());
  return ns != nullptr && ns->getName() == "tessera" && isa<TranslationUnitDecl>(ns->getDeclContext());
}

CollectedSite CollectSite(ASTContext& ctx, const CallExpr* call, const FunctionDecl* enclosing,
                          const CallIndex& calls) {
  CollectedSite out;
  SourceManager& sm = ctx.getSourceManager();
  SourceLocation loc = sm.getExpansionLoc(call->getBeginLoc());
  SiteResult& r = out.result;
  llvm::SmallString<256> path(sm.getFilename(loc));
  llvm::sys::fs::make_absolute(path);
  llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/true);
  r.file = std::string(path);
  r.line = sm.getExpansionLineNumber(loc);
  r.column = sm.getExpansionColumnNumber(loc);
  r.function = enclosing != nullptr ? enclosing->getQualifiedNameAsString() : "";

  if (call->getNumArgs() < 2) {
    out.why_not = "unexpected parallel_for signature";
    return out;
  }
  const Expr* space = Strip(call->getArg(0));
  QualType elem;
  int rank = 0;
  if (!ArrayTypeArgs(space->getType(), &elem, &rank)) {
    out.why_not = "the iteration space is not a tessera::DistArray";
    return out;
  }
  r.model.key_rank = rank;
  r.space_element_type = TypeName(elem, ctx);
  for (unsigned i = 2; i < call->getNumArgs(); ++i) {
    const Expr* a = call->getArg(i);
    const CXXRecordDecl* rd = RecordOf(a->getType());
    if (rd != nullptr && rd->getName() == "DataParallel") {
      bool known = true;
      r.model.data_parallel_staleness = PermissionStaleness(ctx, a, &known);
      if (!known) {
        out.notes.emplace_back(a->getBeginLoc(),
                               "the DataParallel staleness is not a compile-time constant; "
                               "recording 0");
        r.conservative.push_back(out.notes.back().second);
      }
    }
  }
  const LambdaExpr* lambda = FindLambda(call->getArg(1));
  if (lambda == nullptr) {
    out.why_not = "the loop body is not a lambda tessc can see";
    return out;
  }
  const CXXMethodDecl* op = lambda->getCallOperator();
  if (lambda->isGenericLambda()) {
    // `[&](const auto& key, auto& v)`: walk the instantiation parallel_for made, not the
    // type-dependent pattern.
    op = nullptr;
    if (const FunctionTemplateDecl* ft = lambda->getDependentCallOperator()) {
      for (const FunctionDecl* spec : ft->specializations()) {
        if (spec->getBody() != nullptr) {
          op = cast<CXXMethodDecl>(spec);
          break;
        }
      }
    }
  }
  if (op == nullptr || op->getBody() == nullptr) {
    out.why_not = "the loop body's instantiation is not available";
    return out;
  }
  BodyWalker walker(ctx, calls, &out);
  const ValueDecl* space_decl = nullptr;
  int space_array = -1;
  if (const auto* dre = dyn_cast<DeclRefExpr>(space)) {
    space_decl = dre->getDecl();
  } else if (const auto* me = dyn_cast<MemberExpr>(space)) {
    space_decl = me->getMemberDecl();
  }
  if (space_decl == nullptr) {
    out.why_not = "the iteration space is not a named array";
    return out;
  }
  space_array = walker.ResolveSpace(space, space_decl);
  r.model.space_array = r.model.arrays[space_array].name;
  walker.Run(call, op, space_decl, space_array, enclosing);
  out.analyzable = true;
  return out;
}

}  // namespace tessera::compiler

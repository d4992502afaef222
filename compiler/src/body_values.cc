// BodyWalker's symbolic evaluation: integers as affine functions of the key, Keys, arrays, row
// views and elements; names tessc cannot resolve become wildcards that alias every array of their
// type, and reference parameters that may be one array are counted against each other.
#include "array_origin.h"
#include "body_walker.h"
#include "var_uses.h"

#include <algorithm>
#include <functional>

#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"
#include "clang/AST/StmtOpenMP.h"

namespace tessera::compiler {

using namespace clang;  // NOLINT(build/namespaces): the file is all Clang AST code

Value BodyWalker::Eval(const Expr* e, int depth) {
  Value v = EvalImpl(e, depth);
  if (v.kind == Value::Kind::kArray || v.kind == Value::Kind::kKey) return v;
  // Never drop an array: an expression of array or view type (or a pointer to one) that tessc
  // could not follow -- an accessor method's result, an element of a container of arrays, a
  // pointer loaded from memory -- may be any array of its type.
  const Expr* s = Strip(e, ctx_);
  const QualType t = s->getType();
  if (!t.isNull() && !t->isDependentType() && IsArrayLike(Classify(t)) &&
      (s->isGLValue() || t->isPointerType() || !isa<CXXConstructExpr>(s))) {
    return WildcardExpr(s);
  }
  return v;
}

Value BodyWalker::EvalImpl(const Expr* e, int depth) {
  if (depth > 32) return {};
  e = Strip(e, ctx_);
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
      if (auto it = loader_fields_.find(v.array); it != loader_fields_.end() && it->second != me) {
        ArrayInfo& info = model_.arrays[v.array];
        info.origin.reset();
        info.loop_only = false;
        info.serial_use.clear();
        info.serial_access.clear();
        info.origin_unknown = "its field is also named through another expression, which may be "
                              "another loader result's";
        loader_fields_.erase(it);
      }
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
        base.prefix.push_back(EvalSubscript(op->getArg(1), depth + 1));
        return base;
      }
      return {};
    }
    if (op->getOperator() == OO_Call && op->getNumArgs() >= 1) {
      Value base = Eval(op->getArg(0), depth + 1);
      if (base.kind == Value::Kind::kArray && base.prefix.empty()) {
        for (unsigned i = 1; i < op->getNumArgs(); ++i) {
          base.prefix.push_back(EvalSubscript(op->getArg(i), depth + 1));
        }
        return base;
      }
    }
    return {};
  }
  if (const auto* call = dyn_cast<CallExpr>(e); call != nullptr && !isa<CXXMemberCallExpr>(e) &&
                                               !isa<CXXOperatorCallExpr>(e)) {
    const FunctionDecl* fd = call->getDirectCallee();
    if (fd != nullptr && fd->getName() == "get" && InStdNamespace(fd) && call->getNumArgs() == 1) {
      const TemplateArgumentList* targs = fd->getTemplateSpecializationArgs();
      if (targs != nullptr && targs->size() >= 1 &&
          targs->get(0).getKind() == TemplateArgument::Integral &&
          Eval(call->getArg(0), depth + 1).kind == Value::Kind::kKey) {
        const int64_t i = targs->get(0).getAsIntegral().getExtValue();
        if (i >= 0 && i < n) return Value::Int(Affine::KeyComponent(n, static_cast<int>(i)));
      }
    }
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
      base.prefix.push_back(EvalSubscript(mc->getArg(0), depth + 1));
      return base;
    }
    if ((name == "at" || name == "get") && mc->getNumArgs() == 1) {
      Value base = Eval(obj, depth + 1);
      if (base.kind != Value::Kind::kArray) return {};
      std::vector<Affine> key = EvalKeyArg(mc->getArg(0));
      base.prefix.insert(base.prefix.end(), key.begin(), key.end());
      base.prefix.resize(model_.arrays[base.array].rank, Affine::Unknown());
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
  if (const auto* cast = dyn_cast<CastExpr>(e); cast != nullptr && IsNarrowingIntCast(cast, ctx_)) {
    // Strip() keeps these: a narrowing cast is the identity only while values fit.
    if (auto c = EvalConstInt(e, ctx_)) return Value::Int(Affine::Constant(n, *c));
    const Affine inner = EvalInt(cast->getSubExpr(), depth + 1);
    Value why;
    if (inner.known() && inner.DependsOnKey()) {
      const QualType to = cast->getType();
      why.why = "'" + Text(e) + "' narrows a key-dependent value to " +
                to.getAsString(ctx_.getPrintingPolicy()) + " (" +
                std::to_string(ctx_.getIntWidth(to)) +
                " bits): larger values wrap, so it is not an affine function of the key and the "
                "subscript is unknown; index with int64_t, the key's type";
    }
    return why;
  }
  if (const auto* bo = dyn_cast<BinaryOperator>(e)) {
    if (bo->getType()->isIntegerType()) {
      switch (bo->getOpcode()) {
        case BO_Add:
        case BO_Sub: {
          const Value l = Eval(bo->getLHS(), depth + 1);
          const Value r = Eval(bo->getRHS(), depth + 1);
          if (!l.why.empty() || !r.why.empty()) {
            Value why;
            why.why = !l.why.empty() ? l.why : r.why;
            return why;
          }
          const Affine a = EvalInt(bo->getLHS(), depth + 1);
          const Affine b = EvalInt(bo->getRHS(), depth + 1);
          return Value::Int(bo->getOpcode() == BO_Add ? a + b : a - b);
        }
        case BO_Mul: {
          Affine l = EvalInt(bo->getLHS(), depth + 1);
          Affine r = EvalInt(bo->getRHS(), depth + 1);
          if (l.IsConstant()) return Value::Int(r.Scaled(l.constant()));
          if (r.IsConstant()) return Value::Int(l.Scaled(r.constant()));
          return {};
        }
        case BO_Comma:
          return Eval(bo->getRHS(), depth + 1);
        case BO_Div:
        case BO_Rem:
        case BO_Shr:
        case BO_Shl:
        case BO_And:
        case BO_Or:
        case BO_Xor: {
          if (auto c = EvalConstInt(e, ctx_)) return Value::Int(Affine::Constant(n, *c));
          const Affine l = EvalInt(bo->getLHS(), depth + 1);
          const Affine r = EvalInt(bo->getRHS(), depth + 1);
          Value why;
          if ((l.known() && l.DependsOnKey()) || (r.known() && r.DependsOnKey())) {
            why.why = "'" + Text(e) + "' is not an affine function of the key ('" +
                      bo->getOpcodeStr().str() +
                      "' is not + - or * by a constant): the subscript is unknown";
          }
          return why;
        }
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

Affine BodyWalker::EvalSubscript(const Expr* e, int depth) {
  Value v = Eval(e, depth);
  if (v.kind == Value::Kind::kInt) return v.affine;
  if (e->getType()->isIntegralOrEnumerationType()) {
    if (auto c = EvalConstInt(e, ctx_)) return Affine::Constant(model_.key_rank, *c);
  }
  if (!v.why.empty()) Note(e->getBeginLoc(), v.why);
  return Affine::Unknown();
}

Affine BodyWalker::EvalInt(const Expr* e, int depth) {
  Value v = Eval(e, depth);
  if (v.kind == Value::Kind::kInt) return v.affine;
  if (e->getType()->isIntegralOrEnumerationType()) {
    if (auto c = EvalConstInt(e, ctx_)) return Affine::Constant(model_.key_rank, *c);
  }
  return Affine::Unknown();
}

Value BodyWalker::EvalDeclRef(const DeclRefExpr* dre, int depth) {
  const ValueDecl* d = dre->getDecl();
  if (const Value* bound = Lookup(d)) return *bound;
  // Structured bindings of a key: `auto [u, i] = key.idx;` binds u to key[0], i to key[1]
  // (through std::get<I> of the hidden copy), unless the bindings are modified.
  if (const auto* bd = dyn_cast<BindingDecl>(d)) {
    const Expr* b = bd->getBinding();
    const auto* decomp = dyn_cast_or_null<DecompositionDecl>(bd->getDecomposedDecl());
    if (b == nullptr || decomp == nullptr || IsMutatedInScope(decomp)) return {};
    for (const BindingDecl* each : decomp->bindings()) {
      for (const Stmt* scope : mutation_scopes_) {
        if (IsReassigned(each, scope)) return {};  // `u = ...`, `++u`, `&u`, bound by reference
      }
    }
    return Eval(b, depth + 1);
  }
  if (const auto* decomp = dyn_cast<DecompositionDecl>(d)) {
    if (decomp->hasInit() && !IsMutatedInScope(decomp)) {
      Value v = Eval(decomp->getInit(), depth + 1);
      if (v.kind == Value::Kind::kKey) return v;
    }
    return {};
  }
  if (const auto* holding = dyn_cast<VarDecl>(d);
      holding != nullptr && holding->isImplicit() && holding->hasInit() &&
      holding->getType()->isReferenceType() &&
      holding->getType().getNonReferenceType()->isIntegralOrEnumerationType()) {
    return Eval(holding->getInit(), depth + 1);  // a tuple-like binding's hidden reference
  }
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
      if (const auto* addr = dyn_cast<UnaryOperator>(Strip(vd->getInit(), ctx_));
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
        if (v.kind == Value::Kind::kArray && isa<MemberExpr>(Strip(vd->getInit(), ctx_)) &&
            model_.arrays.size() == before + 1 && v.array == static_cast<int>(before)) {
          ArrayInfo& info = model_.arrays[v.array];
          info.name = vd->getNameAsString();
          if (OriginResult o = FindLoaderFieldOrigin(vd, ctx_); o.found) {
            loader_fields_[v.array] = Strip(vd->getInit(), ctx_);
            info.origin = o.origin;
            info.origin_unknown.clear();
            info.loop_only = o.loop_only;
            info.serial_use = o.serial_use;
            info.serial_access = o.serial_access;
          } else {
            info.origin_unknown = o.why_not;
          }
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

Value BodyWalker::Wildcard(const ValueDecl* vd, SourceLocation loc) {
  return WildcardFor(vd, vd->getNameAsString(), vd->getType(), loc);
}

Value BodyWalker::WildcardExpr(const Expr* e) {
  if (wildcard_name_ != nullptr) return Wildcard(wildcard_name_, e->getBeginLoc());
  std::string text = "expression at line " +
                     std::to_string(sm_.getExpansionLineNumber(e->getBeginLoc()));
  return WildcardFor(e, text, e->getType(), e->getBeginLoc());
}

Value BodyWalker::WildcardFor(const void* key, const std::string& name, QualType type, SourceLocation loc,
                  const std::vector<int>* candidates) {
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

void BodyWalker::ExpandWildcards() {
  const size_t original = model_.accesses.size();
  for (const auto& [decl, wid] : wildcard_ids_) {
    auto cand = wildcard_candidates_.find(wid);
    // A view may be made over the storage of an array of any rank: its element type must agree.
    const bool view = model_.arrays[wid].view;
    for (size_t i = 0; i < original; ++i) {
      if (model_.accesses[i].array != wid) continue;
      for (int other = 0; other < static_cast<int>(model_.arrays.size()); ++other) {
        if (other == wid) continue;
        if (view ? model_.arrays[other].relaxed != model_.arrays[wid].relaxed ||
                       model_.arrays[other].element_type != model_.arrays[wid].element_type
                 : array_sigs_[other] != array_sigs_[wid]) {
          continue;
        }
        if (cand != wildcard_candidates_.end() &&
            std::find(cand->second.begin(), cand->second.end(), other) == cand->second.end()) {
          continue;
        }
        Duplicate(i, other, "may alias '" + model_.arrays[wid].name + "'", view);
      }
    }
  }
}

void BodyWalker::ExpandParameterAliases() {
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

bool BodyWalker::ParamsDistinct(const ParmVarDecl* a, const ParmVarDecl* b, std::string* why) {
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
  if (!CalledOnlyDirectly(fn, ctx_, why)) return false;
  for (const CallExpr* call : it->second) {
    unsigned ia = a->getFunctionScopeIndex();
    unsigned ib = b->getFunctionScopeIndex();
    if (ia >= call->getNumArgs() || ib >= call->getNumArgs()) return false;
    const auto* da = dyn_cast<DeclRefExpr>(Strip(call->getArg(ia), ctx_));
    const auto* db = dyn_cast<DeclRefExpr>(Strip(call->getArg(ib), ctx_));
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

std::vector<Affine> BodyWalker::EvalKeyArg(const Expr* e) {
  const int n = model_.key_rank;
  const Expr* s = Strip(e, ctx_);
  if (Eval(s).kind == Value::Kind::kKey) {
    std::vector<Affine> key;
    for (int i = 0; i < n; ++i) key.push_back(Affine::KeyComponent(n, i));
    return key;
  }
  // Key{{a, b}}: nested braces (Key, std::array, its C array) around the components.
  std::vector<Affine> out;
  std::function<void(const Expr*)> flatten = [&](const Expr* x) {
    x = Strip(x, ctx_);
    if (const auto* il = dyn_cast<InitListExpr>(x)) {
      for (const Expr* i : il->inits()) flatten(i);
      return;
    }
    if (const auto* ce = dyn_cast<CXXConstructExpr>(x); ce && ce->getNumArgs() == 1) {
      flatten(ce->getArg(0));
      return;
    }
    out.push_back(EvalSubscript(x));
  };
  flatten(s);
  return out;
}

void BodyWalker::Duplicate(size_t access, int array, const std::string& reason,
                           bool any_element) {
  Access copy = model_.accesses[access];
  copy.array = array;
  copy.conservative_reason = reason;
  copy.alias_copy = true;
  if (any_element) copy.subscripts.clear();
  copy.subscripts.resize(model_.arrays[array].rank, Affine::Unknown());
  model_.accesses.push_back(copy);
  out_->access_locs.push_back(out_->access_locs[access]);
  out_->access_via.push_back(out_->access_via[access]);
}

}  // namespace tessera::compiler

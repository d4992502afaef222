// BodyWalker's storage model: where an lvalue lives and where a pointer, iterator or view points.
//
// Contract: every write the body makes lands in one of four places -- one iteration's own storage
// (fine), a DistArray (an access, with the subscripts tessc can see), state outside the loop body
// shared by every iteration (the site runs serially: a note says what and the fix), or storage
// tessc cannot trace (serially too). Reads of untraceable storage are remembered and make the site
// serial when the loop writes an array they could alias (same element type). Calls tessc cannot
// see into (another translation unit, function pointers, std::function, virtual dispatch) make
// the site serial through Opaque().
#include <algorithm>

#include "body_walker.h"
#include "clang/Lex/Lexer.h"
#include "known_library.h"

namespace tessera::compiler {

using namespace clang;  // NOLINT(build/namespaces): the file is all Clang AST code

namespace {

constexpr int kMaxPlaceDepth = 24;

// Order of caution when two places meet (`c ? a : b`).
int Rank(Place::Kind k) {
  switch (k) {
    case Place::Kind::kLocal:
      return 0;
    case Place::Kind::kArray:
      return 1;
    case Place::Kind::kShared:
      return 2;
    case Place::Kind::kUnknown:
      return 3;
  }
  return 3;
}

Place Join(Place a, const Place& b) {
  if (a.kind == Place::Kind::kArray && b.kind == Place::Kind::kArray) {
    if (a.array != b.array) return Place::Unknown(a.what.empty() ? b.what : a.what);
    if (a.prefix != b.prefix) a.prefix.clear();
    return a;
  }
  return Rank(a.kind) >= Rank(b.kind) ? a : b;
}

// Element type pairs that may alias: the same type, or a character type (which aliases anything).
bool MayAliasType(const std::string& a, const std::string& b) {
  auto charish = [](const std::string& t) {
    return t == "int8" || t == "uint8" || t == "char" || t == "std::byte";
  };
  return a == b || charish(a) || charish(b);
}

}  // namespace

std::string BodyWalker::Text(const Expr* e) const {
  const CharSourceRange range = CharSourceRange::getTokenRange(
      sm_.getExpansionRange(e->getSourceRange()).getAsRange());
  std::string text =
      Lexer::getSourceText(range, sm_, ctx_.getLangOpts()).str();
  std::replace(text.begin(), text.end(), '\n', ' ');
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text.empty() ? "an expression" : text;
}

bool BodyWalker::IsOwningContainer(QualType t) {
  const CXXRecordDecl* rd = t.getNonReferenceType()->getAsCXXRecordDecl();
  if (rd == nullptr || !InStdNamespace(rd)) return false;
  static const char* const kOwning[] = {
      "vector", "array", "deque", "basic_string", "map", "unordered_map", "set", "unordered_set",
      "multimap", "multiset", "list", "forward_list", "optional", "pair", "tuple", "valarray",
      "bitset", "unique_ptr"};
  const StringRef name = rd->getName();
  return std::any_of(std::begin(kOwning), std::end(kOwning),
                     [&](const char* n) { return name == n; });
}

bool BodyWalker::IsIterationLocal(const VarDecl* vd) const {
  // thread_local scratch: each executor thread has its own (DESIGN: per-thread scratch that no
  // value flows through from one iteration to the next, as in apps/lda's cdf).
  if (vd->getTLSKind() != VarDecl::TLS_None) return true;
  if (vd->isStaticLocal() || !vd->isLocalVarDeclOrParm()) return false;
  if (vd->getType()->isReferenceType()) return false;
  const DeclContext* parent = vd->getParentFunctionOrMethod();
  // The loop body's own init-captures live in its closure, which every iteration shares.
  if (vd->isInitCapture() && !walked_.empty() &&
      parent == static_cast<const DeclContext*>(walked_.front())) {
    return false;
  }
  // So does the closure of a lambda made before the loop and called from the body: its
  // init-captures (`[n = 0]() mutable { return n++; }`) are state every iteration sees. Only a
  // lambda whose expression is inside the body (or a function the walk is in) is made anew each
  // iteration.
  if (vd->isInitCapture()) {
    const bool made_per_iteration =
        IsInside(vd, lambda_body_) ||
        std::any_of(walked_.begin(), walked_.end(), [&](const FunctionDecl* f) {
          return parent != static_cast<const DeclContext*>(f) && IsInside(vd, f->getBody());
        });
    if (!made_per_iteration) return false;
  }
  return std::any_of(walked_.begin(), walked_.end(), [&](const FunctionDecl* f) {
    return parent == static_cast<const DeclContext*>(f);
  });
}

Place BodyWalker::RootOf(const Expr* e, int depth) {
  if (depth > kMaxPlaceDepth) return Place::Unknown(Text(e));
  const Expr* s = Strip(e, ctx_);
  Value v = Eval(s);
  if (v.kind == Value::Kind::kArray) return {Place::Kind::kArray, v.array, v.prefix, ""};
  if (s->isPRValue()) return Place::Local();  // a temporary of this iteration
  if (const auto* dre = dyn_cast<DeclRefExpr>(s)) {
    const ValueDecl* d = dre->getDecl();
    const bool is_ref = d->getType()->isReferenceType();
    if (const Value* bound = Lookup(d)) {
      if (bound->kind == Value::Kind::kPlace && is_ref) return *bound->place;
      if (bound->kind != Value::Kind::kPlace) return Place::Local();
    }
    if (const auto* bd = dyn_cast<BindingDecl>(d)) {
      if (const Expr* b = bd->getBinding()) return RootOf(b, depth + 1);
      return Place::Unknown("'" + bd->getNameAsString() + "'");
    }
    const auto* vd = dyn_cast<VarDecl>(d);
    if (vd == nullptr) return Place::Local();  // functions, enumerators
    if (is_ref) {
      if (vd->hasInit()) return RootOf(vd->getInit(), depth + 1);
      const bool outer = !IsInside(vd, lambda_body_) &&
                         std::none_of(walked_.begin(), walked_.end(), [&](const FunctionDecl* f) {
                           return vd->getParentFunctionOrMethod() ==
                                  static_cast<const DeclContext*>(f);
                         });
      return outer ? Place::Shared("'" + vd->getNameAsString() + "'")
                   : Place::Unknown("'" + vd->getNameAsString() + "'");
    }
    if (IsIterationLocal(vd)) return Place::Local();
    return Place::Shared("'" + vd->getNameAsString() + "'");
  }
  if (const auto* me = dyn_cast<MemberExpr>(s)) {
    if (me->isArrow()) return PointeeOf(me->getBase(), depth + 1);
    // A reference member refers to whatever the object's references point into.
    if (me->getMemberDecl()->getType()->isReferenceType()) return PointeeOf(me->getBase(), depth + 1);
    return RootOf(me->getBase(), depth + 1);
  }
  if (const auto* ase = dyn_cast<ArraySubscriptExpr>(s)) {
    Place p = PointeeOf(ase->getBase(), depth + 1);
    auto idx = EvalConstInt(ase->getIdx(), ctx_);
    if (!idx || *idx != 0) p.prefix.clear();
    return p;
  }
  if (const auto* uo = dyn_cast<UnaryOperator>(s)) {
    if (uo->getOpcode() == UO_Deref) return PointeeOf(uo->getSubExpr(), depth + 1);
    if (uo->isIncrementDecrementOp()) return RootOf(uo->getSubExpr(), depth + 1);
    return Place::Unknown(Text(s));
  }
  if (const auto* bo = dyn_cast<BinaryOperator>(s)) {
    if (bo->getOpcode() == BO_Comma) return RootOf(bo->getRHS(), depth + 1);
    if (bo->isAssignmentOp()) return RootOf(bo->getLHS(), depth + 1);
    return Place::Unknown(Text(s));
  }
  if (const auto* co = dyn_cast<AbstractConditionalOperator>(s)) {
    return Join(RootOf(co->getTrueExpr(), depth + 1), RootOf(co->getFalseExpr(), depth + 1));
  }
  if (const auto* op = dyn_cast<CXXOperatorCallExpr>(s)) {
    const OverloadedOperatorKind k = op->getOperator();
    if (op->getNumArgs() >= 1 && (k == OO_Subscript || k == OO_Star || k == OO_Arrow)) {
      const Expr* obj = op->getArg(0);
      if (IsOwningContainer(obj->getType())) return RootOf(obj, depth + 1);
      Place p = PointeeOf(obj, depth + 1);
      if (k == OO_Subscript) p.prefix.clear();
      return p;
    }
    if (op->getNumArgs() >= 1 && op->isAssignmentOp()) return RootOf(op->getArg(0), depth + 1);
    return Place::Unknown(Text(s));
  }
  if (const auto* mc = dyn_cast<CXXMemberCallExpr>(s)) {
    const Expr* obj = mc->getImplicitObjectArgument();
    if (obj != nullptr && IsOwningContainer(obj->getType())) return RootOf(obj, depth + 1);
    if (obj != nullptr && Classify(obj->getType()) == TypeKind::kSparseRowView) {
      return PointeeOf(obj, depth + 1);
    }
    return Place::Unknown(Text(s));
  }
  if (const auto* call = dyn_cast<CallExpr>(s)) {
    // std::get<I>(t), std::move(x), std::forward<T>(x): a part of, or the object itself.
    const FunctionDecl* fd = call->getDirectCallee();
    if (fd != nullptr && InStdNamespace(fd) && call->getNumArgs() == 1 &&
        (fd->getName() == "get" || fd->getName() == "move" || fd->getName() == "forward")) {
      return RootOf(call->getArg(0), depth + 1);
    }
  }
  if (isa<StringLiteral>(s) || isa<CompoundLiteralExpr>(s)) return Place::Local();
  return Place::Unknown(Text(s));
}

Place BodyWalker::PointeeOf(const Expr* e, int depth) {
  if (depth > kMaxPlaceDepth) return Place::Unknown(Text(e));
  const Expr* s = e;
  while (true) {
    s = Strip(s, ctx_);
    const auto* ce = dyn_cast<CastExpr>(s);
    if (ce == nullptr) break;
    if (ce->getCastKind() == CK_ArrayToPointerDecay) return RootOf(ce->getSubExpr(), depth + 1);
    if (ce->getCastKind() == CK_NullToPointer) return Place::Local();
    s = ce->getSubExpr();
  }
  Value v = Eval(s);
  if (v.kind == Value::Kind::kArray) return {Place::Kind::kArray, v.array, v.prefix, ""};
  if (isa<CXXNullPtrLiteralExpr>(s) || isa<IntegerLiteral>(s) || isa<StringLiteral>(s)) {
    return Place::Local();
  }
  if (isa<CXXThisExpr>(s)) {
    if (!this_places_.empty()) return this_places_.back();
    return Place::Shared("the object '*this'");
  }
  if (const auto* uo = dyn_cast<UnaryOperator>(s)) {
    if (uo->getOpcode() == UO_AddrOf) return RootOf(uo->getSubExpr(), depth + 1);
    if (uo->isIncrementDecrementOp()) {
      Place p = PointeeOf(uo->getSubExpr(), depth + 1);
      p.prefix.clear();
      return p;
    }
    if (uo->getOpcode() == UO_Deref) return Place::Unknown(Text(s));  // a pointer read from memory
  }
  if (const auto* bo = dyn_cast<BinaryOperator>(s)) {
    if ((bo->getOpcode() == BO_Add || bo->getOpcode() == BO_Sub) && bo->getType()->isPointerType()) {
      const Expr* ptr = bo->getLHS()->getType()->isPointerType() ? bo->getLHS() : bo->getRHS();
      Place p = PointeeOf(ptr, depth + 1);
      p.prefix.clear();
      return p;
    }
    if (bo->getOpcode() == BO_Comma) return PointeeOf(bo->getRHS(), depth + 1);
  }
  if (const auto* co = dyn_cast<AbstractConditionalOperator>(s)) {
    return Join(PointeeOf(co->getTrueExpr(), depth + 1), PointeeOf(co->getFalseExpr(), depth + 1));
  }
  if (const auto* dre = dyn_cast<DeclRefExpr>(s)) {
    const ValueDecl* d = dre->getDecl();
    if (const Value* bound = Lookup(d)) {
      if (bound->kind == Value::Kind::kPlace && !d->getType()->isReferenceType()) {
        return *bound->place;
      }
      if (bound->kind == Value::Kind::kLambda || bound->kind == Value::Kind::kInt ||
          bound->kind == Value::Kind::kKey) {
        return Place::Local();
      }
    }
    if (const auto* bd = dyn_cast<BindingDecl>(d)) {
      if (const Expr* b = bd->getBinding()) return PointeeOf(b, depth + 1);
      return Place::Unknown("'" + bd->getNameAsString() + "'");
    }
    const auto* vd = dyn_cast<VarDecl>(d);
    if (vd == nullptr) return Place::Local();  // a function: code, not data
    // A C array decays to a pointer to its own storage (Strip dropped the decay).
    if (vd->getType()->isArrayType()) return RootOf(dre, depth + 1);
    const std::string name = "'" + vd->getNameAsString() + "'";
    // A reference to a pointer or view: where the referenced object points.
    if (vd->getType()->isReferenceType() && vd->hasInit()) return PointeeOf(vd->getInit(), depth + 1);
    if (!vd->hasInit() || (isa<ParmVarDecl>(vd) && !Lookup(vd))) {
      return Place::Unknown(name + " (tessc cannot see what it was set to)");
    }
    // The pointer must keep pointing into the object it was initialized with: stepping (++,
    // +=) stays inside that object, anything else may re-point it.
    const bool iteration_local = IsIterationLocal(vd);
    const bool enclosing_local =
        enclosing_ != nullptr && vd->isLocalVarDeclOrParm() && !vd->isStaticLocal() &&
        vd->getParentFunctionOrMethod() == static_cast<const DeclContext*>(enclosing_);
    if (!iteration_local && !enclosing_local) {
      return Place::Unknown(name + " (declared outside the function that runs the loop)");
    }
    const Stmt* fn_body = enclosing_ != nullptr ? enclosing_->getBody() : nullptr;
    const Stmt* scope = iteration_local
                            ? (mutation_scopes_.empty() ? lambda_body_ : mutation_scopes_.back())
                            : fn_body;
    if (IsRepointed(vd, scope) || IsRepointed(vd, lambda_body_)) {
      return Place::Unknown(name + " (it is re-pointed)");
    }
    Place p = PointeeOf(vd->getInit(), depth + 1);
    // A sparse row's iterator steps inside its row, and so does a range-for's own iterator
    // (from its range's begin() to its end()); any other pointer may step anywhere.
    const bool range_for_iterator = vd->isImplicit() && vd->getName().startswith("__begin");
    if ((IsStepped(vd, scope) || IsStepped(vd, lambda_body_)) &&
        Classify(vd->getType()) != TypeKind::kSparseRowView && !range_for_iterator) {
      p.prefix.clear();
    }
    if (p.kind == Place::Kind::kUnknown && !vd->getName().empty()) p.what = name;
    return p;
  }
  if (const auto* mc = dyn_cast<CXXMemberCallExpr>(s)) {
    const Expr* obj = mc->getImplicitObjectArgument();
    if (obj == nullptr) return Place::Unknown(Text(s));
    const TypeKind tk = Classify(obj->getType());
    if (IsArrayLike(tk) || tk == TypeKind::kSparseRowView) {
      const StringRef name = mc->getMethodDecl()->getName();
      Value base = Eval(obj);
      if (base.kind == Value::Kind::kArray) {
        if (name == "sparse_row" && mc->getNumArgs() == 1) {
          base.prefix.push_back(EvalSubscript(mc->getArg(0)));
        } else if (name == "find" && mc->getNumArgs() == 1) {
          std::vector<Affine> key = EvalKeyArg(mc->getArg(0));
          base.prefix.insert(base.prefix.end(), key.begin(), key.end());
        }
        return {Place::Kind::kArray, base.array, base.prefix, ""};
      }
      return PointeeOf(obj, depth + 1);
    }
    if (IsOwningContainer(obj->getType())) return RootOf(obj, depth + 1);
    // begin()/end()/data() of a library view (std::span, std::string_view): where it points.
    const StringRef m = mc->getMethodDecl()->getName();
    if ((m == "begin" || m == "end" || m == "data" || m == "cbegin" || m == "cend" ||
         m == "rbegin" || m == "rend") &&
        obj->getType().getNonReferenceType()->getAsCXXRecordDecl() != nullptr &&
        IsLibraryDecl(obj->getType().getNonReferenceType()->getAsCXXRecordDecl(), sm_)) {
      return PointeeOf(obj, depth + 1);
    }
    return Place::Unknown(Text(s));
  }
  if (const auto* op = dyn_cast<CXXOperatorCallExpr>(s)) {
    const OverloadedOperatorKind k = op->getOperator();
    if (op->getNumArgs() >= 1 && !IsOwningContainer(op->getArg(0)->getType()) &&
        (k == OO_Star || k == OO_Arrow || k == OO_Plus || k == OO_Minus || k == OO_PlusPlus ||
         k == OO_MinusMinus || k == OO_PlusEqual || k == OO_MinusEqual)) {
      Place p = PointeeOf(op->getArg(0), depth + 1);
      if (k != OO_Star && k != OO_Arrow) p.prefix.clear();
      return p;
    }
    return Place::Unknown(Text(s));
  }
  if (const auto* call = dyn_cast<CallExpr>(s)) {
    // std::begin / std::end / std::data / std::next / std::prev: into their argument.
    const FunctionDecl* fd = call->getDirectCallee();
    if (fd != nullptr && InStdNamespace(fd) && call->getNumArgs() >= 1) {
      const StringRef n = fd->getName();
      const Expr* a = call->getArg(0);
      if (n == "begin" || n == "end" || n == "data" || n == "cbegin" || n == "cend") {
        if (IsOwningContainer(a->getType()) || a->getType()->isArrayType()) return RootOf(a, depth + 1);
        return PointeeOf(a, depth + 1);
      }
      if (n == "next" || n == "prev") {
        Place p = PointeeOf(a, depth + 1);
        p.prefix.clear();
        return p;
      }
    }
    return Place::Unknown(Text(s));
  }
  if (const auto* cons = dyn_cast<CXXConstructExpr>(s)) {
    // A view or iterator built from pointers (std::span(p, n)): where those point.
    Place p = Place::Local();
    for (const Expr* a : cons->arguments()) {
      const QualType t = a->getType();
      if (t->isPointerType() || t->isRecordType()) p = Join(p, PointeeOf(a, depth + 1));
      if (t->isReferenceType() || (a->isGLValue() && !t->isPointerType() && !t->isRecordType())) {
        p = Join(p, RootOf(a, depth + 1));
      }
    }
    // A view made from one row view (std::span<float> s(w)) covers that row, bounded by the
    // view's size; one made from a pointer and a count may reach past it.
    auto is_view = [](const Expr* a) {
      const TypeKind k = Classify(a->getType());
      return k == TypeKind::kRowView || k == TypeKind::kRelaxedRowView;
    };
    // So does one made from a view's own begin()/data() and its size()/end().
    auto view_member = [&](const Expr* a, std::initializer_list<StringRef> names) -> const Expr* {
      const auto* mc = dyn_cast<CXXMemberCallExpr>(Strip(a, ctx_));
      if (mc == nullptr || mc->getImplicitObjectArgument() == nullptr ||
          !is_view(mc->getImplicitObjectArgument())) {
        return nullptr;
      }
      for (StringRef n : names) {
        if (mc->getMethodDecl()->getName() == n) return mc->getImplicitObjectArgument();
      }
      return nullptr;
    };
    bool from_row = cons->getNumArgs() == 1 && is_view(cons->getArg(0));
    if (cons->getNumArgs() == 2) {
      const Expr* first = view_member(cons->getArg(0), {"data", "begin"});
      const Expr* second = view_member(cons->getArg(1), {"size", "end"});
      if (first != nullptr && second != nullptr) {
        const Value a = Eval(first);
        const Value b = Eval(second);
        if (a.kind == Value::Kind::kArray && b.kind == Value::Kind::kArray &&
            a.array == b.array && a.prefix == b.prefix && !a.prefix.empty() &&
            std::all_of(a.prefix.begin(), a.prefix.end(),
                        [](const Affine& x) { return x.known(); })) {
          return {Place::Kind::kArray, a.array, a.prefix, ""};
        }
      }
    }
    if (!from_row) p.prefix.clear();
    return p;
  }
  if (const auto* il = dyn_cast<InitListExpr>(s)) {
    Place p = Place::Local();
    for (const Expr* a : il->inits()) p = Join(p, PointeeOf(a, depth + 1));
    return p;
  }
  if (isa<LambdaExpr>(s)) return Place::Local();
  if (const auto* me = dyn_cast<MemberExpr>(s)) {
    // A pointer stored in an object: its value was set somewhere tessc does not follow, unless
    // the object is a view of the programming model.
    if (Classify(me->getBase()->getType()) == TypeKind::kSparseRowView) {
      return PointeeOf(me->getBase(), depth + 1);
    }
    return Place::Unknown(Text(s));
  }
  return Place::Unknown(Text(s));
}

void BodyWalker::CheckWrite(const Expr* e, Use use, SourceLocation loc) {
  const QualType t = e->getType();
  // The programming model's own objects: arrays and views are handled as accesses, an
  // Accumulator is a reduction made for this.
  if (const CXXRecordDecl* rd = t.getNonReferenceType()->getAsCXXRecordDecl()) {
    if (InTesseraNamespace(rd) && Classify(t) != TypeKind::kKey) return;
  }
  const Place p = RootOf(e);
  switch (p.kind) {
    case Place::Kind::kLocal:
      return;
    case Place::Kind::kArray:
      AddAccess(p.array, p.prefix, use, loc, "");
      return;
    case Place::Kind::kShared: {
      std::string hint;
      if (use == Use::kAdd && t->isArithmeticType()) {
        hint = "; for a sum over iterations use a tessera::Accumulator";
      } else {
        hint = "; keep it in a local of the body, or make it a tessera::DistArray indexed by the "
               "key (or a tessera::RelaxedArray updated with add())";
      }
      Opaque(loc, "'" + Text(e) + "' writes " + p.what +
                      ", state outside the loop body that every iteration shares" + hint);
      return;
    }
    case Place::Kind::kUnknown:
      Opaque(loc, "'" + Text(e) + "' writes through " + p.what +
                      ", which tessc cannot trace: it may point into a DistArray or other shared "
                      "state; access arrays by name (operator(), at(), row()) rather than through "
                      "raw pointers or iterators");
      return;
  }
}

bool BodyWalker::IsIndirectLvalue(const Expr* e) {
  const Expr* s = e->IgnoreParens();
  if (isa<ArraySubscriptExpr>(s)) return true;
  if (const auto* uo = dyn_cast<UnaryOperator>(s)) return uo->getOpcode() == UO_Deref;
  if (const auto* me = dyn_cast<MemberExpr>(s)) {
    return me->isArrow() || me->getMemberDecl()->getType()->isReferenceType() ||
           IsIndirectLvalue(me->getBase());
  }
  if (const auto* dre = dyn_cast<DeclRefExpr>(s)) {
    if (isa<BindingDecl>(dre->getDecl())) return true;
    return dre->getDecl()->getType()->isReferenceType() &&
           !IsArrayLike(Classify(dre->getDecl()->getType()));
  }
  if (const auto* op = dyn_cast<CXXOperatorCallExpr>(s)) {
    const OverloadedOperatorKind k = op->getOperator();
    return op->getNumArgs() >= 1 && (k == OO_Subscript || k == OO_Star || k == OO_Arrow);
  }
  if (const auto* mc = dyn_cast<CXXMemberCallExpr>(s)) {
    return mc->getType()->isReferenceType() || s->isGLValue();
  }
  return false;
}

void BodyWalker::CheckIndirectRead(const Expr* e) {
  const QualType t = e->getType();
  if (const CXXRecordDecl* rd = t.getNonReferenceType()->getAsCXXRecordDecl()) {
    if (InTesseraNamespace(rd)) return;
  }
  const Place p = RootOf(e);
  // The object read through the untraced pointer: for `e.count` it is the struct `e`, which
  // cannot be an element of a DistArray of scalars (type-based aliasing).
  QualType object = t;
  for (const Expr* x = e->IgnoreParens(); const auto* me = dyn_cast<MemberExpr>(x);
       x = me->getBase()->IgnoreParenImpCasts()) {
    object = me->isArrow() ? me->getBase()->getType()->getPointeeType()
                           : me->getBase()->getType();
    if (me->isArrow() || me->getMemberDecl()->getType()->isReferenceType()) break;
  }
  if (p.kind == Place::Kind::kArray) {
    AddAccess(p.array, p.prefix, Use::kRead, e->getBeginLoc(), "");
  } else if (p.kind == Place::Kind::kUnknown && (t->isArithmeticType() || t->isRecordType())) {
    untraced_reads_.emplace_back(e->getBeginLoc(),
                                 TypeName(object.getNonReferenceType(), ctx_) + "|" + Text(e) + "|" +
                                     p.what);
  }
}

void BodyWalker::CheckUntracedReads() {
  for (const auto& [loc, packed] : untraced_reads_) {
    const size_t a = packed.find('|');
    const size_t b = packed.find('|', a + 1);
    const std::string type = packed.substr(0, a);
    const std::string text = packed.substr(a + 1, b - a - 1);
    const std::string what = packed.substr(b + 1);
    for (size_t i = 0; i < model_.accesses.size(); ++i) {
      const Access& acc = model_.accesses[i];
      const ArrayInfo& info = model_.arrays[acc.array];
      if (!acc.write || info.relaxed || !MayAliasType(info.element_type, type)) continue;
      Opaque(loc, "'" + text + "' reads through " + what +
                      ", which tessc cannot trace, while the loop writes '" + info.name +
                      "' (same element type): it may read elements other iterations write; "
                      "access the array by name (operator(), at(), row()) instead");
      break;
    }
  }
}

bool BodyWalker::IsRepointed(const VarDecl* vd, const Stmt* s, const Stmt* parent) const {
  if (s == nullptr) return false;
  if (const auto* dre = dyn_cast<DeclRefExpr>(s); dre != nullptr && dre->getDecl() == vd) {
    if (parent == nullptr) return true;
    if (isa<LambdaExpr>(parent)) return false;  // a capture; the body is checked too
    if (const auto* ice = dyn_cast<ImplicitCastExpr>(parent)) {
      return ice->getCastKind() != CK_LValueToRValue && ice->getCastKind() != CK_NoOp;
    }
    if (const auto* uo = dyn_cast<UnaryOperator>(parent)) return !uo->isIncrementDecrementOp();
    if (const auto* cao = dyn_cast<CompoundAssignOperator>(parent)) {
      return cao->getLHS() != s ||
             (cao->getOpcode() != BO_AddAssign && cao->getOpcode() != BO_SubAssign);
    }
    if (const auto* op = dyn_cast<CXXOperatorCallExpr>(parent)) {
      const OverloadedOperatorKind k = op->getOperator();
      if (op->getNumArgs() >= 1 && op->getArg(0) == s) {
        return k == OO_Equal || k == OO_Amp || k == OO_Call;
      }
      return false;  // compared with, or an operand of, another iterator
    }
    if (const auto* me = dyn_cast<MemberExpr>(parent)) {
      const auto* md = dyn_cast<CXXMethodDecl>(me->getMemberDecl());
      return md != nullptr && !md->isConst();
    }
    // `for (x : v)` binds its hidden range reference to v and only calls begin() and end().
    if (const auto* ds = dyn_cast<DeclStmt>(parent); ds != nullptr && ds->isSingleDecl()) {
      const auto* range = dyn_cast<VarDecl>(ds->getSingleDecl());
      if (range != nullptr && range->isImplicit() && range->getName().startswith("__range")) {
        return false;
      }
    }
    return true;
  }
  for (const Stmt* c : s->children()) {
    if (IsRepointed(vd, c, s)) return true;
  }
  return false;
}

bool BodyWalker::IsStepped(const VarDecl* vd, const Stmt* s, const Stmt* parent) const {
  if (s == nullptr) return false;
  if (const auto* dre = dyn_cast<DeclRefExpr>(s); dre != nullptr && dre->getDecl() == vd) {
    if (parent == nullptr) return false;
    if (const auto* uo = dyn_cast<UnaryOperator>(parent)) return uo->isIncrementDecrementOp();
    if (const auto* cao = dyn_cast<CompoundAssignOperator>(parent)) return cao->getLHS() == s;
    if (const auto* op = dyn_cast<CXXOperatorCallExpr>(parent)) {
      const OverloadedOperatorKind k = op->getOperator();
      return op->getArg(0) == s && (k == OO_PlusPlus || k == OO_MinusMinus ||
                                    k == OO_PlusEqual || k == OO_MinusEqual);
    }
    return false;
  }
  for (const Stmt* c : s->children()) {
    if (IsStepped(vd, c, s)) return true;
  }
  return false;
}

void BodyWalker::Opaque(SourceLocation loc, std::string text) {
  loc = sm_.getExpansionLoc(loc);
  for (const auto& r : out_->serial_reasons) {
    if (r.first == loc && r.second == text) return;
  }
  out_->serial_reasons.emplace_back(loc, std::move(text));
}

}  // namespace tessera::compiler

#include "var_uses.h"

#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "clang_util.h"

namespace tessera::compiler {

using namespace clang;  // NOLINT(build/namespaces): the file is all Clang AST code

namespace {

class Refs : public RecursiveASTVisitor<Refs> {
 public:
  explicit Refs(const VarDecl* vd) : vd_(vd) {}
  bool VisitDeclRefExpr(DeclRefExpr* e) {
    if (e->getDecl() == vd_) refs.push_back(e);
    return true;
  }
  std::vector<const DeclRefExpr*> refs;

 private:
  const VarDecl* vd_;
};

bool IsConstRef(QualType t) {
  return t->isReferenceType() && t.getNonReferenceType().isConstQualified();
}

}  // namespace

bool KeepsItsArray(const VarDecl* vd, ASTContext& ctx, std::string* why, int depth);

namespace {

bool KeepsPointee(const VarDecl* p, ASTContext& ctx, std::string* why, int depth);

// `e` denotes the array object (an lvalue of the variable, through references and `*p`): true if
// its use cannot put another array in its place.
bool UseKeepsArray(const Expr* e, ASTContext& ctx, std::string* why, int depth) {
  const Stmt* child = e;
  auto parents = ctx.getParents(*child);
  while (!parents.empty() && parents[0].get<Stmt>() != nullptr &&
         (isa<ImplicitCastExpr>(parents[0].get<Stmt>()) || isa<ParenExpr>(parents[0].get<Stmt>()))) {
    child = parents[0].get<Stmt>();
    parents = ctx.getParents(*child);
  }
  if (parents.empty()) return false;
  const Stmt* parent = parents[0].get<Stmt>();
  if (parent == nullptr) {
    const auto* bound = parents[0].get<VarDecl>();
    if (bound == nullptr) return false;
    if (IsConstRef(bound->getType())) return true;
    // Another name for it: that name's uses count.
    return bound->getType()->isReferenceType() && KeepsItsArray(bound, ctx, why, depth + 1);
  }
  if (isa<LambdaExpr>(parent)) return true;  // a capture; uses inside the lambda are found too
  if (const auto* cond = dyn_cast<ConditionalOperator>(parent)) {
    // `c ? A : B` as an lvalue: its uses count (the condition itself is not the array).
    return cond->getCond() != child && UseKeepsArray(cond, ctx, why, depth);
  }
  if (const auto* member = dyn_cast<MemberExpr>(parent)) {
    // A member call keeps the array, except an explicit `A.operator=(...)`.
    const auto* method = dyn_cast<CXXMethodDecl>(member->getMemberDecl());
    return member->getBase() == child &&
           !(method != nullptr && (method->isCopyAssignmentOperator() ||
                                   method->isMoveAssignmentOperator()));
  }
  if (const auto* member = dyn_cast<CXXDependentScopeMemberExpr>(parent)) {
    return !member->isImplicitAccess() && member->getBase() == child;
  }
  if (const auto* member = dyn_cast<UnresolvedMemberExpr>(parent)) {
    return !member->isImplicitAccess() && member->getBase() == child;
  }
  if (const auto* un = dyn_cast<UnaryOperator>(parent)) {
    if (un->getOpcode() != UO_AddrOf) return false;
    // &A stored in a pointer variable: the uses of what it points to count.
    auto up = ctx.getParents(*un);
    while (!up.empty() && up[0].get<Stmt>() != nullptr &&
           (isa<ImplicitCastExpr>(up[0].get<Stmt>()) || isa<ParenExpr>(up[0].get<Stmt>()))) {
      up = ctx.getParents(*up[0].get<Stmt>());
    }
    const auto* pv = up.empty() ? nullptr : up[0].get<VarDecl>();
    return pv != nullptr && KeepsPointee(pv, ctx, why, depth + 1);
  }
  if (const auto* op = dyn_cast<CXXOperatorCallExpr>(parent)) {
    if (op->getArg(0) == child) {
      return op->getOperator() == OO_Call || op->getOperator() == OO_Subscript;
    }
    const auto* callee = dyn_cast_or_null<FunctionDecl>(op->getCalleeDecl());
    const unsigned shift = isa_and_nonnull<CXXMethodDecl>(callee) ? 1 : 0;
    for (unsigned i = shift; callee != nullptr && i < op->getNumArgs(); ++i) {
      if (op->getArg(i) == child && i - shift < callee->getNumParams()) {
        return IsConstRef(callee->getParamDecl(i - shift)->getType());
      }
    }
    return false;
  }
  if (const auto* call = dyn_cast<CallExpr>(parent)) {
    if (call->getCallee() == child) return true;  // a call of the object: operator()
    const FunctionDecl* fd = call->getDirectCallee();
    if (fd == nullptr) return false;
    if (fd->getName() == "parallel_for" && InTesseraNamespace(fd) && call->getNumArgs() > 0 &&
        call->getArg(0) == child) {
      return true;
    }
    for (unsigned i = 0; i < call->getNumArgs() && i < fd->getNumParams(); ++i) {
      if (call->getArg(i) != child) continue;
      const QualType t = fd->getParamDecl(i)->getType();
      if (IsConstRef(t)) return true;
      // A non-const reference parameter of a function defined here that keeps it in turn.
      const FunctionDecl* def = nullptr;
      return t->isReferenceType() && fd->hasBody(def) && def != nullptr &&
             i < def->getNumParams() && KeepsItsArray(def->getParamDecl(i), ctx, why, depth + 1);
    }
    return false;
  }
  return false;
}

template <typename F>
bool EveryRef(const VarDecl* vd, ASTContext& ctx, F f) {
  Refs refs(vd);
  const auto* fn = dyn_cast_or_null<FunctionDecl>(vd->getParentFunctionOrMethod());
  if (fn != nullptr && fn->getBody() != nullptr) {
    refs.TraverseStmt(fn->getBody());
  } else {
    refs.TraverseDecl(ctx.getTranslationUnitDecl());
  }
  for (const DeclRefExpr* ref : refs.refs) {
    if (!f(ref)) return false;
  }
  return true;
}

std::string Line(const Stmt* s, const ASTContext& ctx) {
  return std::to_string(ctx.getSourceManager().getExpansionLineNumber(s->getBeginLoc()));
}

// Every use of pointer `p` reaches the array through `*p` or `p->`, each such use keeping it.
bool KeepsPointee(const VarDecl* p, ASTContext& ctx, std::string* why, int depth) {
  if (depth > 8) return false;
  return EveryRef(p, ctx, [&](const DeclRefExpr* ref) {
    const Stmt* child = ref;
    auto parents = ctx.getParents(*child);
    while (!parents.empty() && parents[0].get<Stmt>() != nullptr &&
           (isa<ImplicitCastExpr>(parents[0].get<Stmt>()) || isa<ParenExpr>(parents[0].get<Stmt>()))) {
      child = parents[0].get<Stmt>();
      parents = ctx.getParents(*child);
    }
    const Stmt* parent = parents.empty() ? nullptr : parents[0].get<Stmt>();
    if (const auto* un = dyn_cast_or_null<UnaryOperator>(parent); un && un->getOpcode() == UO_Deref) {
      return UseKeepsArray(un, ctx, why, depth);
    }
    if (const auto* member = dyn_cast_or_null<MemberExpr>(parent)) {
      const auto* method = dyn_cast<CXXMethodDecl>(member->getMemberDecl());
      return member->isArrow() && member->getBase() == child &&
             !(method != nullptr && (method->isCopyAssignmentOperator() ||
                                     method->isMoveAssignmentOperator()));
    }
    // Re-pointing `p` is tessc's aliasing question, not this one; anything else may write *p.
    if (const auto* bin = dyn_cast_or_null<BinaryOperator>(parent)) {
      return bin->getOpcode() == BO_Assign && bin->getLHS()->IgnoreParenImpCasts() == ref;
    }
    return isa_and_nonnull<LambdaExpr>(parent);
  });
}

}  // namespace

namespace {

class FunctionRefs : public RecursiveASTVisitor<FunctionRefs> {
 public:
  explicit FunctionRefs(const FunctionDecl* fn) : fn_(fn->getCanonicalDecl()) {}
  bool VisitDeclRefExpr(DeclRefExpr* e) {
    if (const auto* f = dyn_cast<FunctionDecl>(e->getDecl()); f && f->getCanonicalDecl() == fn_) {
      refs.push_back(e);
    }
    return true;
  }
  std::vector<const DeclRefExpr*> refs;

 private:
  const FunctionDecl* fn_;
};

}  // namespace

bool CalledOnlyDirectly(const FunctionDecl* fn, ASTContext& ctx, std::string* why) {
  FunctionRefs refs(fn);
  refs.TraverseDecl(ctx.getTranslationUnitDecl());
  for (const DeclRefExpr* ref : refs.refs) {
    const Stmt* child = ref;
    auto parents = ctx.getParents(*child);
    while (!parents.empty() && parents[0].get<ImplicitCastExpr>() != nullptr) {
      child = parents[0].get<Stmt>();
      parents = ctx.getParents(*child);
    }
    const auto* call = parents.empty() ? nullptr : parents[0].get<CallExpr>();
    if (call != nullptr && call->getCallee() == child) continue;
    *why = "'" + fn->getNameAsString() + "' is used as a value at line " + Line(ref, ctx) +
           " (its address taken or passed on), so a call tessc does not see may pass any "
           "arguments";
    return false;
  }
  return true;
}

bool KeepsItsArray(const VarDecl* vd, ASTContext& ctx, std::string* why, int depth) {
  if (depth > 8) {
    *why = "'" + vd->getNameAsString() + "' is passed on by reference too deeply to follow";
    return false;
  }
  std::string inner;
  const bool kept = EveryRef(vd, ctx, [&](const DeclRefExpr* ref) {
    if (UseKeepsArray(ref, ctx, &inner, depth)) return true;
    *why = "'" + vd->getNameAsString() + "' may be given another array at line " + Line(ref, ctx) +
           " (assigned, swapped, moved or handed out by non-const reference)";
    return false;
  });
  return kept;
}

}  // namespace tessera::compiler

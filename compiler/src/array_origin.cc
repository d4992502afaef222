#include "array_origin.h"

#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/SmallVector.h"

namespace tessera::compiler {
namespace {

using clang::dyn_cast;
using clang::isa;

bool IsTesseraArrayClass(const clang::CXXRecordDecl* rd) {
  if (rd == nullptr) return false;
  const auto* ns = dyn_cast<clang::NamespaceDecl>(rd->getDeclContext());
  if (ns == nullptr || ns->getName() != "tessera" ||
      !isa<clang::TranslationUnitDecl>(ns->getDeclContext())) {
    return false;
  }
  return rd->getName() == "DistArray" || rd->getName() == "RelaxedArray";
}

bool IsTesseraFunction(const clang::FunctionDecl* fd, llvm::StringRef name) {
  if (fd == nullptr || fd->getName() != name) return false;
  for (const clang::DeclContext* dc = fd->getDeclContext(); dc != nullptr; dc = dc->getParent()) {
    if (const auto* ns = dyn_cast<clang::NamespaceDecl>(dc)) {
      if (ns->getName() == "tessera" && isa<clang::TranslationUnitDecl>(ns->getDeclContext())) {
        return true;
      }
    }
  }
  return false;
}

// Through the wrappers Clang puts around an initializer or an argument.
const clang::Expr* StripInit(const clang::Expr* e) {
  while (e != nullptr) {
    e = e->IgnoreParenImpCasts();
    if (const auto* c = dyn_cast<clang::ExprWithCleanups>(e)) {
      e = c->getSubExpr();
    } else if (const auto* m = dyn_cast<clang::MaterializeTemporaryExpr>(e)) {
      e = m->getSubExpr();
    } else if (const auto* b = dyn_cast<clang::CXXBindTemporaryExpr>(e)) {
      e = b->getSubExpr();
    } else if (const auto* ctor = dyn_cast<clang::CXXConstructExpr>(e);
               ctor != nullptr && ctor->getNumArgs() == 1 &&
               ctor->getConstructor()->isMoveConstructor()) {
      e = ctor->getArg(0);  // a move from the factory's temporary
    } else {
      return e;
    }
  }
  return e;
}

class UseCollector : public clang::RecursiveASTVisitor<UseCollector> {
 public:
  explicit UseCollector(const clang::VarDecl* var) : var_(var) {}
  bool VisitDeclRefExpr(clang::DeclRefExpr* e) {
    if (e->getDecl() == var_) uses.push_back(e);
    return true;
  }
  llvm::SmallVector<const clang::DeclRefExpr*, 16> uses;

 private:
  const clang::VarDecl* var_;
};

class OriginFinder {
 public:
  explicit OriginFinder(clang::ASTContext& ctx) : ctx_(ctx), sm_(ctx.getSourceManager()) {}

  OriginResult Find(const clang::ValueDecl* decl) {
    OriginResult r;
    const auto* var = dyn_cast_or_null<clang::VarDecl>(decl);
    if (var == nullptr) {
      r.why_not = "it is not a variable (members and globals are not followed yet)";
      return r;
    }
    if (isa<clang::ParmVarDecl>(var)) {
      r.why_not = "it is a function parameter (arrays are not followed across calls yet)";
      return r;
    }
    if (!var->hasLocalStorage() || var->getType()->isReferenceType() || !var->hasInit()) {
      r.why_not =
          "it is not a local variable initialized by a DistArray or RelaxedArray factory call";
      return r;
    }
    const auto* call = dyn_cast<clang::CallExpr>(StripInit(var->getInit()));
    const clang::FunctionDecl* callee = call != nullptr ? call->getDirectCallee() : nullptr;
    const auto* method = dyn_cast_or_null<clang::CXXMethodDecl>(callee);
    if (method == nullptr || !IsTesseraArrayClass(method->getParent()) ||
        !(method->getName() == "dense" || method->getName() == "filled" ||
          method->getName() == "random" || method->getName() == "sparse" ||
          method->getName() == "clone")) {
      r.why_not = "it is not initialized by a DistArray or RelaxedArray factory call (dense, "
                  "filled, random, sparse, clone)";
      return r;
    }
    if (std::string why = StorageMoves(var); !why.empty()) {
      r.why_not = why;
      return r;
    }
    const clang::SourceLocation loc = sm_.getExpansionLoc(call->getBeginLoc());
    const clang::PresumedLoc p = sm_.getPresumedLoc(loc);
    if (p.isInvalid()) {
      r.why_not = "its factory call has no source location";
      return r;
    }
    r.found = true;
    r.origin.file = p.getFilename();
    r.origin.line = p.getLine();
    r.origin.column = p.getColumn();
    return r;
  }

 private:
  // Empty when every use of `var` in its function keeps the storage it was initialized with;
  // otherwise the first use that may not, described.
  std::string StorageMoves(const clang::VarDecl* var) {
    const auto* fn = dyn_cast_or_null<clang::FunctionDecl>(var->getParentFunctionOrMethod());
    if (fn == nullptr || fn->getBody() == nullptr) {
      return "tessc cannot see the function declaring it";
    }
    UseCollector uses(var);
    uses.TraverseStmt(fn->getBody());
    for (const clang::DeclRefExpr* use : uses.uses) {
      if (!KeepsStorage(use)) {
        const clang::PresumedLoc p = sm_.getPresumedLoc(sm_.getExpansionLoc(use->getBeginLoc()));
        return "it is used at line " + std::to_string(p.isValid() ? p.getLine() : 0) +
               " in a way that may move its storage to another variable (an assignment, "
               "std::move or swap, a non-const reference or pointer passed on)";
      }
    }
    return "";
  }

  const clang::Stmt* ParentOf(const clang::Stmt* s, const clang::Decl** decl_parent) {
    *decl_parent = nullptr;
    auto parents = ctx_.getParents(*s);
    if (parents.empty()) return nullptr;
    if (const auto* d = parents[0].get<clang::Decl>()) {
      *decl_parent = d;
      return nullptr;
    }
    return parents[0].get<clang::Stmt>();
  }

  bool KeepsStorage(const clang::DeclRefExpr* use) {
    const clang::Stmt* child = use;
    const clang::Decl* decl_parent = nullptr;
    const clang::Stmt* parent = ParentOf(child, &decl_parent);
    bool made_const = false;
    // Through parentheses and casts; a cast to const keeps the storage in place for good.
    while (parent != nullptr &&
           (isa<clang::ParenExpr>(parent) || isa<clang::ImplicitCastExpr>(parent))) {
      if (const auto* cast = dyn_cast<clang::ImplicitCastExpr>(parent)) {
        if (cast->getType().isConstQualified()) made_const = true;
      }
      child = parent;
      parent = ParentOf(child, &decl_parent);
    }
    if (decl_parent != nullptr) {
      // A reference bound to it: only a const one is harmless.
      const auto* ref = dyn_cast<clang::VarDecl>(decl_parent);
      return ref != nullptr && ref->getType()->isReferenceType() &&
             ref->getType().getNonReferenceType().isConstQualified();
    }
    if (parent == nullptr) return false;
    if (made_const) return true;
    if (const auto* member = dyn_cast<clang::MemberExpr>(parent)) {
      return member->getBase()->IgnoreParenImpCasts() == use;  // W.row(i), W.shuffle(...)
    }
    if (isa<clang::LambdaExpr>(parent)) return true;  // a by-reference capture
    if (const auto* op = dyn_cast<clang::CXXOperatorCallExpr>(parent)) {
      const auto kind = op->getOperator();
      if ((kind == clang::OO_Call || kind == clang::OO_Subscript) && op->getNumArgs() > 0 &&
          op->getArg(0)->IgnoreParenImpCasts() == use) {
        return true;  // W(i, j)
      }
      return false;  // assignment, swap-like operators
    }
    if (const auto* call = dyn_cast<clang::CallExpr>(parent)) {
      const clang::FunctionDecl* callee = call->getDirectCallee();
      if (IsTesseraFunction(callee, "parallel_for")) return true;
      if (callee == nullptr) return false;
      for (unsigned i = 0; i < call->getNumArgs() && i < callee->getNumParams(); ++i) {
        if (call->getArg(i)->IgnoreParenImpCasts() != use) continue;
        const clang::QualType t = callee->getParamDecl(i)->getType();
        return t->isReferenceType() && t.getNonReferenceType().isConstQualified();
      }
      return false;
    }
    return false;
  }

  clang::ASTContext& ctx_;
  const clang::SourceManager& sm_;
};

}  // namespace

OriginResult FindArrayOrigin(const clang::ValueDecl* decl, clang::ASTContext& ctx) {
  return OriginFinder(ctx).Find(decl);
}

}  // namespace tessera::compiler

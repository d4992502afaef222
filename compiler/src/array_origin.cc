#include "array_origin.h"

#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/SmallVector.h"

namespace tessera::compiler {
namespace {

using clang::cast;
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

bool IsDistArrayClass(const clang::CXXRecordDecl* rd) {
  return IsTesseraArrayClass(rd) && rd->getName() == "DistArray";
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

  // `ref` is a local reference bound to a field of a loader's result, `auto& r = loaded->train;`
  // where `loaded` is a local initialized by tessera::load_triples or load_docword.
  OriginResult FindLoaderField(const clang::VarDecl* ref) {
    OriginResult r;
    r.why_not = "it is not a reference to a field of a local load_triples or load_docword result";
    if (ref == nullptr || !ref->hasLocalStorage() || !ref->getType()->isReferenceType() ||
        !ref->hasInit()) {
      return r;
    }
    const auto* field = dyn_cast<clang::MemberExpr>(StripInit(ref->getInit()));
    if (field == nullptr || !isa<clang::FieldDecl>(field->getMemberDecl())) return r;
    const clang::VarDecl* result = ResultOf(field);
    if (result == nullptr || !result->hasLocalStorage() || result->getType()->isReferenceType() ||
        !result->hasInit()) {
      return r;
    }
    const auto* call = dyn_cast<clang::CallExpr>(StripInit(result->getInit()));
    const clang::FunctionDecl* callee = call != nullptr ? call->getDirectCallee() : nullptr;
    if (!IsTesseraFunction(callee, "load_triples") && !IsTesseraFunction(callee, "load_docword")) {
      return r;
    }
    const std::string member = field->getMemberDecl()->getNameAsString();
    // The result must stay where it is, and so must the field wherever it is named.
    std::vector<const clang::Expr*> field_uses;
    if (std::string why = ResultStays(result, member, field, &field_uses); !why.empty()) {
      r.why_not = why;
      return r;
    }
    if (std::string why = StorageMoves(ref); !why.empty()) {
      r.why_not = why;
      return r;
    }
    r.serial_use = FirstSerialUse(ref, &r.serial_access);
    for (const clang::Expr* use : field_uses) {
      if (!r.serial_use.empty()) break;
      if (InLoop(use) || MetadataUse(use)) continue;
      if (ElementAccess(use)) {
        if (r.serial_access.empty()) r.serial_access = LineOf(use);
        continue;
      }
      r.serial_use = LineOf(use);
    }
    r.loop_only = r.serial_use.empty();
    if (!r.loop_only) r.serial_access.clear();
    const clang::PresumedLoc p = sm_.getPresumedLoc(sm_.getExpansionLoc(call->getBeginLoc()));
    if (p.isInvalid()) {
      r.why_not = "its loader call has no source location";
      return r;
    }
    r.found = true;
    r.why_not.clear();
    r.origin.file = p.getFilename();
    r.origin.line = p.getLine();
    r.origin.column = p.getColumn();
    r.origin.member = member;
    return r;
  }

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
    // permuted() makes a new array (of another array's elements) at its call, like clone().
    if (method == nullptr || !IsTesseraArrayClass(method->getParent()) ||
        !(method->getName() == "dense" || method->getName() == "filled" ||
          method->getName() == "random" || method->getName() == "sparse" ||
          method->getName() == "clone" || method->getName() == "permuted")) {
      r.why_not = "it is not initialized by a DistArray or RelaxedArray factory call (dense, "
                  "filled, random, sparse, clone, permuted)";
      return r;
    }
    if (std::string why = StorageMoves(var); !why.empty()) {
      r.why_not = why;
      return r;
    }
    r.serial_use = FirstSerialUse(var, &r.serial_access);
    r.loop_only = r.serial_use.empty();
    if (!r.loop_only) r.serial_access.clear();
    // The runtime records the line g++ gives std::source_location in the call: that of its
    // opening parenthesis, next to the method's name (`tokens\n    .permuted(...)`).
    const clang::SourceLocation loc = sm_.getExpansionLoc(
        method->getName() == "permuted" ? call->getExprLoc() : call->getBeginLoc());
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

  // Empty when every use of `var` is inside a parallel_for body, is a parallel_for's space,
  // asks only what the runtime answers for a partitioned array too (MetadataUse) or reads or
  // writes one element from code every worker runs (ElementAccess: the first one's line goes to
  // `*access`); otherwise "line N", the first other use.
  std::string FirstSerialUse(const clang::VarDecl* var, std::string* access) {
    const auto* fn = dyn_cast_or_null<clang::FunctionDecl>(var->getParentFunctionOrMethod());
    UseCollector uses(var);
    uses.TraverseStmt(fn->getBody());
    for (const clang::DeclRefExpr* use : uses.uses) {
      if (InLoop(use) || MetadataUse(use)) continue;
      if (ElementAccess(use)) {
        if (access->empty()) *access = LineOf(use);
        continue;
      }
      return LineOf(use);
    }
    return "";
  }

  // `use(i, j)`, `use.at(k)` or `use.get(k)` of a DistArray, outside every lambda and every
  // rank-dependent condition, whose element is read as a value or assigned to (`=`, `op=`,
  // `++`, `--`), or passed to a call: every worker runs it alike, so the runtime can fetch the
  // element's row from its holder (a collective) and the array can stay partitioned. A
  // reference or pointer kept from it (`auto& x = A(i)`, `&A(i)`) and row views are not: a
  // later loop may move the row away from under them.
  bool ElementAccess(const clang::Expr* use) {
    const clang::Stmt* child = use;
    const clang::Stmt* parent = EnclosingUse(use, &child);
    const clang::Decl* decl_parent = nullptr;
    const clang::Expr* access = nullptr;
    if (const auto* op = dyn_cast_or_null<clang::CXXOperatorCallExpr>(parent)) {
      const auto* method = dyn_cast_or_null<clang::CXXMethodDecl>(op->getDirectCallee());
      if (op->getOperator() == clang::OO_Call && op->getNumArgs() >= 1 && op->getArg(0) == child &&
          method != nullptr && IsDistArrayClass(method->getParent())) {
        access = op;
      }
    } else if (const auto* member = dyn_cast_or_null<clang::MemberExpr>(parent)) {
      const auto* method = dyn_cast<clang::CXXMethodDecl>(member->getMemberDecl());
      if (method != nullptr && IsDistArrayClass(method->getParent()) &&
          (method->getName() == "at" || method->getName() == "get")) {
        access = dyn_cast_or_null<clang::CXXMemberCallExpr>(ParentOf(member, &decl_parent));
      }
    }
    if (access == nullptr || InAnyLambda(access) || RankCondition(access, ctx_).isValid()) {
      return false;
    }
    // What the element is used for.
    child = access;
    parent = ParentOf(access, &decl_parent);
    // Through parentheses and the cast that adds const (binding a const reference).
    while (parent != nullptr &&
           (isa<clang::ParenExpr>(parent) ||
            (isa<clang::ImplicitCastExpr>(parent) &&
             cast<clang::ImplicitCastExpr>(parent)->getCastKind() == clang::CK_NoOp))) {
      child = parent;
      parent = ParentOf(parent, &decl_parent);
    }
    if (parent == nullptr) return false;  // bound to a reference: `auto& x = A(i);`
    if (const auto* cast = dyn_cast<clang::ImplicitCastExpr>(parent)) {
      return cast->getCastKind() == clang::CK_LValueToRValue;
    }
    if (const auto* bin = dyn_cast<clang::BinaryOperator>(parent)) {
      return bin->isAssignmentOp() ? bin->getLHS()->IgnoreParens() == child : true;
    }
    if (const auto* un = dyn_cast<clang::UnaryOperator>(parent)) {
      return un->isIncrementDecrementOp();
    }
    if (const auto* op = dyn_cast<clang::CXXOperatorCallExpr>(parent)) {
      return op->isAssignmentOp() && op->getArg(0) == child;
    }
    return isa<clang::CallExpr>(parent) || isa<clang::CXXConstructExpr>(parent) ||
           isa<clang::ReturnStmt>(parent) || isa<clang::IfStmt>(parent);
  }

  // Whether `s` is inside a lambda (of a parallel_for body or not) of its function.
  bool InAnyLambda(const clang::Stmt* s) {
    clang::DynTypedNode node = clang::DynTypedNode::create(*s);
    for (int depth = 0; depth < 512; ++depth) {
      auto parents = ctx_.getParents(node);
      if (parents.empty()) return false;
      node = parents[0];
      if (node.get<clang::LambdaExpr>() != nullptr) return true;
      if (const auto* fn = node.get<clang::FunctionDecl>()) {
        const auto* method = dyn_cast<clang::CXXMethodDecl>(fn);
        return method != nullptr && method->getParent()->isLambda();
      }
    }
    return true;
  }

  // The parent of `use` above its parentheses and implicit casts; *child the expression under it.
  const clang::Stmt* EnclosingUse(const clang::Expr* use, const clang::Stmt** child) {
    const clang::Decl* decl_parent = nullptr;
    const clang::Stmt* parent = ParentOf(use, &decl_parent);
    while (parent != nullptr &&
           (isa<clang::ParenExpr>(parent) || isa<clang::ImplicitCastExpr>(parent))) {
      *child = parent;
      parent = ParentOf(parent, &decl_parent);
    }
    return parent;
  }

  std::string LineOf(const clang::Expr* use) {
    const clang::PresumedLoc p = sm_.getPresumedLoc(sm_.getExpansionLoc(use->getBeginLoc()));
    return "line " + std::to_string(p.isValid() ? p.getLine() : 0);
  }

  // `use.m(...)` for a method that reads no element (shape, counts) or that reorders the
  // elements inside the runtime (which gathers a partitioned array first when it must): code
  // outside loops calling only these never sees where the elements are.
  bool MetadataUse(const clang::Expr* use) {
    const clang::Stmt* child = use;
    const clang::Stmt* parent = EnclosingUse(use, &child);
    // save_array(A, path): the runtime saves a partitioned array where its rows live, as a
    // collective of every worker -- so only when no rank-dependent condition guards the call
    // (SaveUnderRankCondition warns about those; A then stays whole and saves locally).
    if (const auto* call = dyn_cast_or_null<clang::CallExpr>(parent);
        call != nullptr && IsSaveCall(call) && call->getNumArgs() > 0 && call->getArg(0) == child) {
      return RankCondition(call, ctx_).isInvalid();
    }
    // B.assign_permuted(A, perm), for A: the runtime copies A's values where they live,
    // collectively -- so, as for save_array, only outside lambdas and rank-dependent conditions.
    if (const auto* call = dyn_cast_or_null<clang::CXXMemberCallExpr>(parent);
        call != nullptr && call->getNumArgs() > 0 && call->getArg(0) == child) {
      const clang::CXXMethodDecl* callee = call->getMethodDecl();
      return callee != nullptr && callee->getName() == "assign_permuted" &&
             IsTesseraArrayClass(callee->getParent()) && !InAnyLambda(call) &&
             RankCondition(call, ctx_).isInvalid();
    }
    const auto* member = dyn_cast_or_null<clang::MemberExpr>(parent);
    if (member == nullptr) return false;
    const auto* method = dyn_cast<clang::CXXMethodDecl>(member->getMemberDecl());
    if (method == nullptr || !IsTesseraArrayClass(method->getParent())) return false;
    // A.permuted(perm) and B.assign_permuted(A, perm), for B: bulk copies the runtime makes where
    // the elements live, collectively -- so, as for save_array, only where no rank-dependent
    // condition guards the call.
    if (method->getName() == "permuted" || method->getName() == "assign_permuted") {
      const clang::Decl* decl_parent = nullptr;
      const auto* call = dyn_cast_or_null<clang::CXXMemberCallExpr>(ParentOf(member, &decl_parent));
      return call != nullptr && !InAnyLambda(call) && RankCondition(call, ctx_).isInvalid();
    }
    static constexpr const char* kMethods[] = {"nnz",   "size",      "extent",         "shape",
                                               "rank",  "is_sparse", "valid",          "context",
                                               "shuffle", "sort_keys", "shuffle_blocks"};
    for (const char* m : kMethods) {
      if (method->getName() == m) return true;
    }
    return false;
  }

  // The local variable a loader field is read from: `loaded->f`, `(*loaded).f`,
  // `loaded.value().f`; null otherwise.
  const clang::VarDecl* ResultOf(const clang::MemberExpr* field) {
    const clang::Expr* base = field->getBase()->IgnoreParenImpCasts();
    if (const auto* op = dyn_cast<clang::CXXOperatorCallExpr>(base)) {
      if ((op->getOperator() == clang::OO_Arrow || op->getOperator() == clang::OO_Star) &&
          op->getNumArgs() == 1) {
        base = op->getArg(0)->IgnoreParenImpCasts();
      } else {
        return nullptr;
      }
    } else if (const auto* call = dyn_cast<clang::CXXMemberCallExpr>(base)) {
      const clang::CXXMethodDecl* m = call->getMethodDecl();
      if (m == nullptr || m->getName() != "value") return nullptr;
      base = call->getImplicitObjectArgument()->IgnoreParenImpCasts();
    } else {
      return nullptr;
    }
    const auto* ref = dyn_cast<clang::DeclRefExpr>(base);
    return ref != nullptr ? dyn_cast<clang::VarDecl>(ref->getDecl()) : nullptr;
  }

  // Empty when every use of the loader result `result` is ok()/status(), or names a field
  // (`result->g`); then the uses naming `member` (which count as uses of the array) are in
  // `field_uses` and each must keep the field's storage. Otherwise why not.
  // `bound` is the field expression the analysed reference is initialized with.
  std::string ResultStays(const clang::VarDecl* result, const std::string& member,
                          const clang::MemberExpr* bound,
                          std::vector<const clang::Expr*>* field_uses) {
    const auto* fn = dyn_cast_or_null<clang::FunctionDecl>(result->getParentFunctionOrMethod());
    if (fn == nullptr || fn->getBody() == nullptr) return "tessc cannot see the function declaring it";
    UseCollector uses(result);
    uses.TraverseStmt(fn->getBody());
    for (const clang::DeclRefExpr* use : uses.uses) {
      const clang::Decl* d = nullptr;
      const clang::Stmt* parent = ParentOf(use, &d);
      while (parent != nullptr &&
             (isa<clang::ParenExpr>(parent) || isa<clang::ImplicitCastExpr>(parent))) {
        parent = ParentOf(parent, &d);
      }
      const clang::MemberExpr* field = nullptr;
      if (const auto* m = dyn_cast_or_null<clang::MemberExpr>(parent)) {
        const auto* method = dyn_cast<clang::CXXMethodDecl>(m->getMemberDecl());
        if (method != nullptr && (method->getName() == "ok" || method->getName() == "status")) {
          continue;
        }
        if (method != nullptr && method->getName() == "value") {
          field = dyn_cast_or_null<clang::MemberExpr>(ParentOf(ParentOf(m, &d), &d));
        }
      } else if (const auto* op = dyn_cast_or_null<clang::CXXOperatorCallExpr>(parent)) {
        if (op->getOperator() == clang::OO_Arrow || op->getOperator() == clang::OO_Star) {
          const clang::Stmt* up = ParentOf(op, &d);
          while (up != nullptr && (isa<clang::ParenExpr>(up) || isa<clang::ImplicitCastExpr>(up))) {
            up = ParentOf(up, &d);
          }
          field = dyn_cast_or_null<clang::MemberExpr>(up);
        }
      }
      if (field == nullptr || !isa<clang::FieldDecl>(field->getMemberDecl()) ||
          ResultOf(field) != result) {
        return "the loader's result is used at " + LineOf(use) +
               " in a way tessc does not follow (only ok(), status() and its fields are)";
      }
      if (field->getMemberDecl()->getName() != member || field == bound) continue;
      if (!KeepsStorage(field)) {
        return "it is used at " + LineOf(field) +
               " in a way that may move its storage to another variable (an assignment, "
               "std::move or swap, a non-const reference or pointer passed on)";
      }
      field_uses->push_back(field);
    }
    return "";
  }

  // The nearest enclosing lambda must be a parallel_for body; outside any lambda, the use must be
  // a parallel_for's first argument.
  bool InLoop(const clang::Expr* use) {
    clang::DynTypedNode node = clang::DynTypedNode::create(*use);
    const void* previous = use;
    for (int depth = 0; depth < 512; ++depth) {
      auto parents = ctx_.getParents(node);
      if (parents.empty()) return false;
      node = parents[0];
      if (const auto* lambda = node.get<clang::LambdaExpr>()) {
        // From its body; a capture initializer is evaluated where the lambda is made.
        return previous == lambda->getBody() && IsLoopBody(lambda);
      }
      if (const auto* method = node.get<clang::CXXMethodDecl>()) {
        if (!method->getParent()->isLambda()) return false;
        const clang::LambdaExpr* lambda = LambdaOf(method);
        return lambda != nullptr && IsLoopBody(lambda);
      }
      if (node.get<clang::FunctionDecl>() != nullptr) return false;
      if (const auto* call = node.get<clang::CallExpr>()) {
        if (IsTesseraFunction(call->getDirectCallee(), "parallel_for") && call->getNumArgs() > 0 &&
            call->getArg(0)->IgnoreParenImpCasts() == use) {
          return true;  // the iteration space
        }
      }
      previous = node.get<clang::Stmt>() != nullptr ? static_cast<const void*>(node.get<clang::Stmt>())
                                                    : static_cast<const void*>(node.get<clang::Decl>());
    }
    return false;
  }

  const clang::LambdaExpr* LambdaOf(const clang::CXXMethodDecl* call_operator) {
    auto parents = ctx_.getParents(*call_operator->getParent());
    for (int depth = 0; depth < 8 && !parents.empty(); ++depth) {
      if (const auto* l = parents[0].get<clang::LambdaExpr>()) return l;
      if (const auto* st = parents[0].get<clang::Stmt>()) {
        parents = ctx_.getParents(*st);
      } else if (const auto* d = parents[0].get<clang::Decl>()) {
        parents = ctx_.getParents(*d);
      } else {
        break;
      }
    }
    return nullptr;
  }

  // `lambda` is passed to parallel_for as its body, directly or through a local variable whose
  // every use is that.
  bool IsLoopBody(const clang::LambdaExpr* lambda) {
    const clang::Stmt* child = lambda;
    const clang::Decl* decl_parent = nullptr;
    const clang::Stmt* parent = ParentOf(child, &decl_parent);
    while (parent != nullptr &&
           (isa<clang::ImplicitCastExpr>(parent) || isa<clang::MaterializeTemporaryExpr>(parent) ||
            isa<clang::CXXBindTemporaryExpr>(parent) || isa<clang::ExprWithCleanups>(parent) ||
            isa<clang::ParenExpr>(parent))) {
      child = parent;
      parent = ParentOf(child, &decl_parent);
    }
    if (const auto* call = dyn_cast_or_null<clang::CallExpr>(parent)) {
      return IsTesseraFunction(call->getDirectCallee(), "parallel_for") &&
             call->getNumArgs() > 1 && call->getArg(1) == child;
    }
    const auto* var = dyn_cast_or_null<clang::VarDecl>(decl_parent);
    if (var == nullptr) return false;
    const auto* fn = dyn_cast_or_null<clang::FunctionDecl>(var->getParentFunctionOrMethod());
    if (fn == nullptr || fn->getBody() == nullptr) return false;
    UseCollector uses(var);
    uses.TraverseStmt(fn->getBody());
    for (const clang::DeclRefExpr* use : uses.uses) {
      const clang::Decl* d = nullptr;
      const clang::Stmt* p = ParentOf(use, &d);
      while (p != nullptr && (isa<clang::ImplicitCastExpr>(p) || isa<clang::ParenExpr>(p))) {
        p = ParentOf(p, &d);
      }
      const auto* call = dyn_cast_or_null<clang::CallExpr>(p);
      if (call == nullptr || !IsTesseraFunction(call->getDirectCallee(), "parallel_for") ||
          call->getNumArgs() < 2 || call->getArg(1)->IgnoreParenImpCasts() != use) {
        return false;
      }
    }
    return true;
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

  bool KeepsStorage(const clang::Expr* use) {
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

bool IsSaveCall(const clang::CallExpr* call) {
  const clang::FunctionDecl* fd = call != nullptr ? call->getDirectCallee() : nullptr;
  return IsTesseraFunction(fd, "save_array") || IsTesseraFunction(fd, "save_array_text");
}

namespace {

// Whether `e` reads JobInfo::rank, directly or through local variables initialized from it.
bool RankDependent(const clang::Expr* e, int depth) {
  if (e == nullptr || depth > 8) return false;
  class Finder : public clang::RecursiveASTVisitor<Finder> {
   public:
    explicit Finder(int depth) : depth_(depth) {}
    bool VisitMemberExpr(clang::MemberExpr* m) {
      const auto* field = dyn_cast<clang::FieldDecl>(m->getMemberDecl());
      if (field != nullptr && field->getName() == "rank" && field->getParent()->getName() == "JobInfo") {
        found = true;
      }
      return !found;
    }
    bool VisitDeclRefExpr(clang::DeclRefExpr* r) {
      const auto* var = dyn_cast<clang::VarDecl>(r->getDecl());
      if (var != nullptr && var->hasLocalStorage() && var->hasInit() &&
          RankDependent(var->getInit(), depth_ + 1)) {
        found = true;
      }
      return !found;
    }
    bool found = false;

   private:
    int depth_;
  };
  Finder f(depth);
  f.TraverseStmt(const_cast<clang::Expr*>(e));
  return f.found;
}

}  // namespace

clang::SourceLocation RankCondition(const clang::Stmt* s, clang::ASTContext& ctx) {
  clang::DynTypedNode node = clang::DynTypedNode::create(*s);
  const clang::Stmt* child = s;
  for (int depth = 0; depth < 512; ++depth) {
    auto parents = ctx.getParents(node);
    if (parents.empty()) break;
    node = parents[0];
    const auto* st = node.get<clang::Stmt>();
    if (st == nullptr) {
      if (node.get<clang::FunctionDecl>() != nullptr) break;
      continue;  // a declaration inside the function (a variable's initializer)
    }
    if (isa<clang::LambdaExpr>(st)) break;
    const clang::Expr* cond = nullptr;
    if (const auto* i = dyn_cast<clang::IfStmt>(st)) {
      if (child != i->getCond()) cond = i->getCond();
    } else if (const auto* c = dyn_cast<clang::ConditionalOperator>(st)) {
      if (child != c->getCond()) cond = c->getCond();
    } else if (const auto* b = dyn_cast<clang::BinaryOperator>(st)) {
      if (b->isLogicalOp() && child == b->getRHS()) cond = b->getLHS();
    } else if (const auto* w = dyn_cast<clang::WhileStmt>(st)) {
      if (child != w->getCond()) cond = w->getCond();
    } else if (const auto* f = dyn_cast<clang::ForStmt>(st)) {
      if (child == f->getBody()) cond = f->getCond();
    }
    if (cond != nullptr && RankDependent(cond, 0)) return cond->getBeginLoc();
    child = st;
  }
  return {};
}

OriginResult FindArrayOrigin(const clang::ValueDecl* decl, clang::ASTContext& ctx) {
  return OriginFinder(ctx).Find(decl);
}

OriginResult FindLoaderFieldOrigin(const clang::VarDecl* ref, clang::ASTContext& ctx) {
  return OriginFinder(ctx).FindLoaderField(ref);
}

}  // namespace tessera::compiler

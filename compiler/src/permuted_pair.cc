#include "permuted_pair.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Analysis/Analyses/ExprMutationAnalyzer.h"
#include "clang_util.h"

namespace tessera::compiler {

using namespace clang;  // NOLINT(build/namespaces): the file is all Clang AST code

namespace {

// The integers of a braced list `{1, 0, 2}` (through the nested list of a std::array).
bool ConstList(const Expr* e, const ASTContext& ctx, std::vector<int>* out) {
  e = Strip(e, ctx);
  if (const auto* il = dyn_cast<InitListExpr>(e)) {
    for (const Expr* init : il->inits()) {
      if (!ConstList(init, ctx, out)) return false;
    }
    return true;
  }
  auto v = EvalConstInt(e, ctx);
  if (!v || *v < 0 || *v > 64) return false;
  out->push_back(static_cast<int>(*v));
  return true;
}

bool IsPermutation(std::vector<int> p) {
  std::sort(p.begin(), p.end());
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != static_cast<int>(i)) return false;
  }
  return true;
}

std::vector<int> Inverse(const std::vector<int>& p) {
  std::vector<int> inv(p.size());
  for (size_t d = 0; d < p.size(); ++d) inv[static_cast<size_t>(p[d])] = static_cast<int>(d);
  return inv;
}

// `made` initialized as `from.permuted(r)`: made's key[d] is from's key[r[d]].
bool MadeByPermuted(const VarDecl* made, const VarDecl* from, const ASTContext& ctx,
                    std::vector<int>* r) {
  if (!made->hasInit()) return false;
  const auto* mc = dyn_cast<CXXMemberCallExpr>(Strip(made->getInit(), ctx));
  if (mc == nullptr || mc->getNumArgs() < 1) return false;
  const CXXMethodDecl* md = mc->getMethodDecl();
  if (md == nullptr || md->getName() != "permuted" || !InTesseraNamespace(md)) return false;
  const auto* obj = dyn_cast<DeclRefExpr>(Strip(mc->getImplicitObjectArgument(), ctx));
  if (obj == nullptr || obj->getDecl() != from) return false;
  r->clear();
  return ConstList(mc->getArg(0), ctx, r) && !r->empty() && IsPermutation(*r);
}

bool IsParallelFor(const CallExpr* call) {
  const FunctionDecl* fd = call->getDirectCallee();
  return fd != nullptr && fd->getName() == "parallel_for" && InTesseraNamespace(fd) &&
         call->getNumArgs() >= 2;
}

// Every reference to the two variables in a function, and the iteration space of each lambda
// passed directly to parallel_for as its body.
class PairUses : public RecursiveASTVisitor<PairUses> {
 public:
  PairUses(const VarDecl* a, const VarDecl* b, const ASTContext& ctx) : a_(a), b_(b), ctx_(ctx) {}
  bool VisitDeclRefExpr(DeclRefExpr* e) {
    if (e->getDecl() == a_ || e->getDecl() == b_) refs.push_back(e);
    return true;
  }
  bool VisitCallExpr(CallExpr* call) {
    if (!IsParallelFor(call)) return true;
    const auto* lambda = dyn_cast<LambdaExpr>(Strip(call->getArg(1), ctx_));
    const auto* space = dyn_cast<DeclRefExpr>(Strip(call->getArg(0), ctx_));
    if (lambda != nullptr && space != nullptr) loop_space[lambda->getCallOperator()] = space->getDecl();
    return true;
  }
  std::vector<const DeclRefExpr*> refs;
  std::map<const CXXMethodDecl*, const ValueDecl*> loop_space;

 private:
  const VarDecl* a_;
  const VarDecl* b_;
  const ASTContext& ctx_;
};

class PairCheck {
 public:
  // b = a.permuted(r).
  PairCheck(const VarDecl* a, const VarDecl* b, std::vector<int> r, ASTContext& ctx)
      : a_(a), b_(b), r_(std::move(r)), ctx_(ctx), sm_(ctx.getSourceManager()) {}

  // q such that `to`'s key[d] is `from`'s key[q[d]] for the pair's common keys.
  std::vector<int> Relation(const ValueDecl* from, const ValueDecl* to) const {
    if (from == to) {
      std::vector<int> id(r_.size());
      std::iota(id.begin(), id.end(), 0);
      return id;
    }
    return from == a_ ? r_ : Inverse(r_);
  }

  bool NoKeyAdded(std::string* why) {
    const auto* fn = dyn_cast_or_null<FunctionDecl>(b_->getParentFunctionOrMethod());
    if (fn == nullptr || fn->getBody() == nullptr) {
      *why = "'" + b_->getNameAsString() + "' is not a variable of a function body";
      return false;
    }
    PairUses uses(a_, b_, ctx_);
    uses.TraverseStmt(fn->getBody());
    loop_space_ = &uses.loop_space;
    const SourceLocation made = sm_.getExpansionLoc(b_->getEndLoc());
    for (const DeclRefExpr* ref : uses.refs) {
      const bool after = !sm_.isBeforeInTranslationUnit(sm_.getExpansionLoc(ref->getBeginLoc()), made);
      if (!after && !InLambda(ref)) continue;
      if (!KeepsKeys(ref, why)) return false;
    }
    return true;
  }

 private:
  const Stmt* Parent(const Stmt* s, const Decl** decl) const {
    auto parents = ctx_.getParents(*s);
    if (parents.empty()) return nullptr;
    if (decl != nullptr) *decl = parents[0].get<Decl>();
    return parents[0].get<Stmt>();
  }

  bool InLambda(const Stmt* s) const {
    DynTypedNode node = DynTypedNode::create(*s);
    for (int depth = 0; depth < 512; ++depth) {
      auto parents = ctx_.getParents(node);
      if (parents.empty()) return false;
      node = parents[0];
      if (node.get<LambdaExpr>() != nullptr) return true;
      if (const auto* method = node.get<CXXMethodDecl>()) return method->getParent()->isLambda();
      if (node.get<FunctionDecl>() != nullptr) return false;
    }
    return true;
  }

  std::string Where(const Stmt* s) const {
    return "line " + std::to_string(sm_.getExpansionLineNumber(s->getBeginLoc()));
  }

  // A use of a or b that cannot add a key to it.
  bool KeepsKeys(const DeclRefExpr* ref, std::string* why) const {
    const std::string name = ref->getDecl()->getNameAsString();
    const Stmt* child = ref;
    const Decl* decl_parent = nullptr;
    const Stmt* parent = Parent(child, &decl_parent);
    while (parent != nullptr && (isa<ImplicitCastExpr>(parent) || isa<ParenExpr>(parent))) {
      child = parent;
      parent = Parent(child, &decl_parent);
    }
    if (parent == nullptr) {
      if (const auto* var = dyn_cast_or_null<VarDecl>(decl_parent);
          var != nullptr && var->getType()->isReferenceType() &&
          var->getType().getNonReferenceType().isConstQualified()) {
        return true;  // a const reference to it
      }
      *why = "'" + name + "' is bound to another name at " + Where(ref);
      return false;
    }
    if (isa<LambdaExpr>(parent)) return true;  // a capture: the lambda's body is checked
    if (const auto* member = dyn_cast<MemberExpr>(parent)) {
      const auto* call = dyn_cast_or_null<CXXMemberCallExpr>(Parent(member, nullptr));
      const CXXMethodDecl* md = call != nullptr ? call->getMethodDecl() : nullptr;
      if (md == nullptr) {
        *why = "'" + name + "' is used at " + Where(ref) + " in a way tessc does not follow";
        return false;
      }
      static const char* const kKeepKeys[] = {
          "valid", "is_sparse", "shape", "extent", "rank", "size", "nnz", "context", "contains",
          "key_at", "find", "sparse_row", "get", "value_at", "shuffle", "shuffle_blocks",
          "sort_keys", "permuted", "assign_permuted", "clone", "reserve", "staleness"};
      const StringRef n = md->getName();
      if (md->isConst() || std::any_of(std::begin(kKeepKeys), std::end(kKeepKeys),
                                       [&](const char* k) { return n == k; })) {
        return true;
      }
      if (n == "at") return KeyedAtPairKey(ref, call, 0, why);
      *why = "'" + name + "." + n.str() + "()' at " + Where(ref) + " may add a key to '" + name + "'";
      return false;
    }
    if (const auto* op = dyn_cast<CXXOperatorCallExpr>(parent); op != nullptr && op->getArg(0) == child) {
      const auto* md = dyn_cast_or_null<CXXMethodDecl>(op->getCalleeDecl());
      if (op->getOperator() == OO_Call && md != nullptr) {
        return md->isConst() || KeyedAtPairKey(ref, op, 1, why);
      }
      *why = "'" + name + "' is assigned or changed at " + Where(ref);
      return false;
    }
    if (const auto* call = dyn_cast<CallExpr>(parent)) {
      if (IsParallelFor(call) && call->getArg(0)->IgnoreParenImpCasts() == ref) return true;
      const FunctionDecl* fd = call->getDirectCallee();
      for (unsigned i = 0; fd != nullptr && i < call->getNumArgs() && i < fd->getNumParams(); ++i) {
        if (call->getArg(i) != child) continue;
        const QualType t = fd->getParamDecl(i)->getType();
        if (t->isReferenceType() && t.getNonReferenceType().isConstQualified()) return true;
      }
      *why = "'" + name + "' is passed at " + Where(ref) + " to a function that may change it";
      return false;
    }
    *why = "'" + name + "' is used at " + Where(ref) + " in a way tessc does not follow";
    return false;
  }

  void FlattenList(const Expr* e, std::vector<const Expr*>* out) const {
    e = Strip(e, ctx_);
    if (const auto* il = dyn_cast<InitListExpr>(e)) {
      for (const Expr* init : il->inits()) FlattenList(init, out);
    } else {
      out->push_back(e);
    }
  }

  // A keyed access to a or b at the key of a parallel_for body over a or b, permuted as the pair
  // is: the args from `first` are that key (one Key argument or its components).
  bool KeyedAtPairKey(const DeclRefExpr* ref, const CallExpr* call, unsigned first,
                      std::string* why) const {
    const ValueDecl* v = ref->getDecl();
    const std::string fail = "'" + v->getNameAsString() + "' is looked up at " + Where(ref) +
                             " at a key other than a loop's own key (or its permutation between '" +
                             a_->getNameAsString() + "' and '" + b_->getNameAsString() +
                             "'), which may add one";
    const ParmVarDecl* key = nullptr;
    std::vector<int> q;
    const size_t n = call->getNumArgs() - first;
    auto key_param = [&](const Expr* e) -> const ParmVarDecl* {
      const auto* dre = dyn_cast<DeclRefExpr>(Strip(e, ctx_));
      return dre != nullptr ? dyn_cast<ParmVarDecl>(dre->getDecl()) : nullptr;
    };
    // The key's components: the arguments, or the braced list of one Key argument.
    std::vector<const Expr*> parts;
    if (n == 1 && Classify(call->getArg(first)->getType()) == TypeKind::kKey) {
      key = key_param(call->getArg(first));
      if (key != nullptr) q = Relation(v, v);
      if (key == nullptr) FlattenList(call->getArg(first), &parts);
    } else {
      for (unsigned i = first; i < call->getNumArgs(); ++i) parts.push_back(call->getArg(i));
    }
    if (key == nullptr && parts.size() == r_.size()) {
      for (const Expr* part : parts) {
        const auto* sub = dyn_cast<CXXOperatorCallExpr>(Strip(part, ctx_));
        if (sub == nullptr || sub->getOperator() != OO_Subscript) break;
        const ParmVarDecl* k = key_param(sub->getArg(0));
        auto c = EvalConstInt(sub->getArg(1), ctx_);
        if (k == nullptr || !c || (key != nullptr && k != key)) break;
        key = k;
        q.push_back(static_cast<int>(*c));
      }
      if (q.size() != parts.size()) key = nullptr;
    }
    const auto* op = key != nullptr ? dyn_cast<CXXMethodDecl>(key->getDeclContext()) : nullptr;
    if (op == nullptr || !op->getParent()->isLambda() || key->getFunctionScopeIndex() != 0) {
      *why = fail;
      return false;
    }
    const QualType kt = key->getType();
    if (!(kt->isReferenceType() ? kt.getNonReferenceType() : kt).isConstQualified() &&
        (op->getBody() == nullptr || ExprMutationAnalyzer(*op->getBody(), ctx_).isMutated(key))) {
      *why = fail + " (the body changes its key)";
      return false;
    }
    auto space = loop_space_->find(op);
    if (space == loop_space_->end() || (space->second != a_ && space->second != b_) ||
        Relation(space->second, v) != q) {
      *why = fail;
      return false;
    }
    return true;
  }

  const VarDecl* a_;
  const VarDecl* b_;
  std::vector<int> r_;
  ASTContext& ctx_;
  const SourceManager& sm_;
  const std::map<const CXXMethodDecl*, const ValueDecl*>* loop_space_ = nullptr;
};

}  // namespace

bool PermutedPairCovers(const ValueDecl* space, const ValueDecl* target, const std::vector<int>& perm,
                        ASTContext& ctx, std::string* why) {
  const auto* s = dyn_cast_or_null<VarDecl>(space);
  const auto* t = dyn_cast_or_null<VarDecl>(target);
  const std::string tname = target != nullptr ? target->getNameAsString() : "?";
  const std::string sname = space != nullptr ? space->getNameAsString() : "?";
  *why = "'" + tname + "' was not made from '" + sname + "' by permuted(...) (nor '" + sname +
         "' from '" + tname + "'), both plain local variables of one function";
  if (s == nullptr || t == nullptr || s == t || !s->isLocalVarDecl() || !t->isLocalVarDecl() ||
      s->isStaticLocal() || t->isStaticLocal() || s->getType()->isReferenceType() ||
      t->getType()->isReferenceType() ||
      s->getParentFunctionOrMethod() != t->getParentFunctionOrMethod()) {
    return false;
  }
  std::vector<int> r;
  const VarDecl* a = nullptr;
  const VarDecl* b = nullptr;
  if (MadeByPermuted(t, s, ctx, &r)) {
    a = s;
    b = t;
  } else if (MadeByPermuted(s, t, ctx, &r)) {
    a = t;
    b = s;
  } else {
    return false;
  }
  PairCheck check(a, b, r, ctx);
  if (check.Relation(space, target) != perm) {
    *why = "'" + tname + "' is looked up at another permutation of the loop's key than the one it " +
           "was made with";
    return false;
  }
  return check.NoKeyAdded(why);
}

}  // namespace tessera::compiler

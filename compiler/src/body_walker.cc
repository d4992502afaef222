// BodyWalker's frame: the walk's entry point, the arrays of a site, recording accesses and notes,
// and the questions about variables (bound values, re-pointing, mutation) the other parts ask.
#include "body_walker.h"

#include "array_origin.h"
#include "permuted_pair.h"
#include "var_uses.h"

#include <algorithm>

#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/StmtCXX.h"
#include "clang/AST/StmtOpenMP.h"

namespace tessera::compiler {

using namespace clang;  // NOLINT(build/namespaces): the file is all Clang AST code

void BodyWalker::Run(const CallExpr* call, const CXXMethodDecl* op, const ValueDecl* space_decl,
                     int space_array, const FunctionDecl* enclosing) {
  enclosing_ = enclosing;
  lambda_body_ = op->getBody();
  frames_.emplace_back();
  const int n = model_.key_rank;
  if (op->getNumParams() >= 1) {
    // A key taken by value may be changed by the body: then it is not the key.
    const ParmVarDecl* kp = op->getParamDecl(0);
    if (kp->getType()->isReferenceType() || kp->getType().isConstQualified() ||
        !MutatedIn(op->getBody(), kp)) {
      Value key;
      key.kind = Value::Kind::kKey;
      frames_.back()[kp] = key;
    }
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
  space_array_ = space_array;
  // The serial order is key order only for a space tessc can prove dense (docs/programming-model.md).
  if (auto it = array_decls_.find(space_array); it == array_decls_.end() || !KnownDense(it->second)) {
    model_.serial_order_is_key_order = false;
  }
  mutation_scopes_.push_back(lambda_body_);
  walked_.push_back(op);
  Visit(lambda_body_, Use::kNone);
  walked_.pop_back();
  mutation_scopes_.pop_back();
  frames_.pop_back();
  CheckUntracedReads();
  ExpandWildcards();
  ExpandParameterAliases();
}

int BodyWalker::ResolveSpace(const Expr* space, const ValueDecl* decl) {
  frames_.emplace_back();
  Value v = Eval(space);
  frames_.pop_back();
  if (v.kind == Value::Kind::kArray && v.prefix.empty()) return v.array;
  return ArrayId(decl);
}

int BodyWalker::ArrayId(const ValueDecl* decl) {
  auto it = array_ids_.find(decl);
  if (it != array_ids_.end()) return it->second;
  int id = NewArray(decl->getNameAsString(), decl->getType(), decl);
  array_ids_[decl] = id;
  return id;
}

int BodyWalker::NewArray(const std::string& name, QualType type, const ValueDecl* decl) {
  ArrayInfo info;
  info.name = name;
  QualType elem;
  int rank = 0;
  QualType array_type = type.getNonReferenceType();
  if (const auto* p = array_type->getAs<PointerType>()) array_type = p->getPointeeType();
  const TypeKind tk = Classify(array_type);
  if (tk == TypeKind::kRowView || tk == TypeKind::kRelaxedRowView) {
    // A view of an unknown 2-D array.
    info.view = true;
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
    info.serial_access = o.serial_access;
  } else {
    info.origin_unknown = decl == nullptr ? "the name was not resolved" : o.why_not;
  }
  // Two names may denote one array only if element type, rank and kind agree.
  array_sigs_.push_back(info.element_type + "/" + std::to_string(info.rank) +
                        (info.relaxed ? "/relaxed" : ""));
  model_.arrays.push_back(info);
  const int id = static_cast<int>(model_.arrays.size()) - 1;
  if (decl != nullptr) array_decls_[id] = decl;
  return id;
}

namespace {

bool IsDenseFactoryCall(const Expr* e, const ASTContext& ctx) {
  const auto* call = dyn_cast_or_null<CallExpr>(e != nullptr ? Strip(e, ctx) : nullptr);
  const FunctionDecl* fd = call != nullptr ? call->getDirectCallee() : nullptr;
  if (fd == nullptr || !InTesseraNamespace(fd)) return false;
  const StringRef n = fd->getName();
  return n == "dense" || n == "filled" || n == "random";
}

// Every expression the translation unit stores into data member `field`: its in-class
// initializer, constructors' member initializers, aggregate initializations and assignments.
// `complete` turns false where it is set some other way tessc does not follow (a constructor
// that leaves it default-constructed, a non-const reference to it handed out).
class FieldStores : public RecursiveASTVisitor<FieldStores> {
 public:
  explicit FieldStores(const FieldDecl* field) : field_(field) {
    if (const Expr* init = field->getInClassInitializer()) stores.push_back(init);
  }
  // Implicit code too: the semantic form of an aggregate initialization (one initializer per
  // field, in order) and constructors the compiler defined.
  bool shouldVisitImplicitCode() const { return true; }
  bool VisitCXXConstructorDecl(CXXConstructorDecl* c) {
    if (c->getParent() != field_->getParent() || !c->doesThisDeclarationHaveABody()) return true;
    if (c->isCopyOrMoveConstructor()) return true;  // copies a dense array
    bool set = false;
    for (const CXXCtorInitializer* init : c->inits()) {
      if (init->getMember() == field_ && init->isWritten()) {
        stores.push_back(init->getInit());
        set = true;
      }
    }
    if (!set && field_->getInClassInitializer() == nullptr) complete = false;
    return true;
  }
  bool VisitInitListExpr(InitListExpr* il) {
    if (!il->isSemanticForm() || il->getType().isNull()) return true;
    if (il->getType()->getAsCXXRecordDecl() != field_->getParent()) return true;
    const unsigned i = field_->getFieldIndex();
    if (i < il->getNumInits()) stores.push_back(il->getInit(i));
    return true;
  }
  bool VisitCXXOperatorCallExpr(CXXOperatorCallExpr* op) {
    if (op->getOperator() != OO_Equal || op->getNumArgs() != 2) return true;
    if (const auto* me = dyn_cast<MemberExpr>(op->getArg(0)->IgnoreParenImpCasts());
        me != nullptr && me->getMemberDecl() == field_) {
      stores.push_back(op->getArg(1));
    }
    return true;
  }
  std::vector<const Expr*> stores;
  bool complete = true;

 private:
  const FieldDecl* field_;
};

}  // namespace

bool BodyWalker::KnownDense(const ValueDecl* d, int depth) const {
  if (d == nullptr || depth > 8) return false;
  if (const auto* field = dyn_cast<FieldDecl>(d)) {
    auto it = dense_fields_.find(field);
    if (it != dense_fields_.end()) return it->second;
    FieldStores stores(field);
    stores.TraverseDecl(ctx_.getTranslationUnitDecl());
    bool dense = stores.complete && !stores.stores.empty();
    for (const Expr* e : stores.stores) dense = dense && IsDenseFactoryCall(e, ctx_);
    dense_fields_[field] = dense;
    return dense;
  }
  if (const auto* parm = dyn_cast<ParmVarDecl>(d)) {
    const auto* fn = dyn_cast<FunctionDecl>(parm->getDeclContext());
    if (fn == nullptr) return false;
    auto it = calls_.find(fn->getCanonicalDecl());
    if (it == calls_.end() || it->second.empty()) return false;
    std::string why;
    if (!CalledOnlyDirectly(fn, ctx_, &why)) return false;
    const unsigned i = parm->getFunctionScopeIndex();
    for (const CallExpr* call : it->second) {
      if (i >= call->getNumArgs()) return false;
      const auto* dre = dyn_cast<DeclRefExpr>(Strip(call->getArg(i), ctx_));
      if (dre == nullptr || !KnownDense(dre->getDecl(), depth + 1)) return false;
    }
    return true;
  }
  const auto* vd = dyn_cast<VarDecl>(d);
  if (vd == nullptr || !vd->hasInit()) return false;
  // Dense as initialized, unless something may put another array in the variable.
  std::string why;
  if (!vd->getType()->isReferenceType() && !KeepsItsArray(vd, ctx_, &why)) {
    if (IsDenseFactoryCall(Strip(vd->getInit(), ctx_), ctx_)) dense_why_ = why;
    return false;
  }
  const Expr* init = Strip(vd->getInit(), ctx_);
  if (const auto* dre = dyn_cast<DeclRefExpr>(init)) return KnownDense(dre->getDecl(), depth + 1);
  return IsDenseFactoryCall(init, ctx_);
}

void BodyWalker::CheckSparseLookup(int array, const std::vector<Affine>& subs, SourceLocation loc,
                                   const std::string& how, bool may_insert) {
  const ArrayInfo& info = model_.arrays[array];
  if (info.relaxed) return;
  if (array == space_array_ && static_cast<int>(subs.size()) == model_.key_rank) {
    bool own = true;
    for (int i = 0; i < model_.key_rank; ++i) {
      own = own && subs[i] == Affine::KeyComponent(model_.key_rank, i);
    }
    if (own) return;  // the visited element: found by its position, no index
  }
  // get, find, contains and const access never insert; the index is built under a lock.
  if (!may_insert) return;
  auto it = array_decls_.find(array);
  if (it != array_decls_.end() && KnownDense(it->second)) return;
  // A name chosen at run time between known arrays (`c ? W : H`): dense if each of them is.
  if (auto c = wildcard_candidates_.find(array); c != wildcard_candidates_.end()) {
    bool all = !c->second.empty();
    for (int other : c->second) {
      auto d = array_decls_.find(other);
      all = all && d != array_decls_.end() && KnownDense(d->second);
    }
    if (all) return;
  }
  // At a permutation of the loop's key, into an array made from the space by permuted(...) (or
  // the space made from it): every key asked for is stored.
  std::string pair_why = dense_why_;
  dense_why_.clear();
  const int n = model_.key_rank;
  if (static_cast<int>(subs.size()) == n && info.rank == n && it != array_decls_.end()) {
    std::vector<int> perm;
    for (const Affine& s : subs) {
      for (int j = 0; j < n; ++j) {
        if (s == Affine::KeyComponent(n, j)) perm.push_back(j);
      }
    }
    auto space = array_decls_.find(space_array_);
    std::string why;
    if (static_cast<int>(perm.size()) == n && space != array_decls_.end()) {
      if (PermutedPairCovers(space->second, it->second, perm, ctx_, &why)) return;
      if (pair_why.empty()) pair_why = why;
    }
  }
  Opaque(loc, "'" + info.name + "' is looked up by key (" + how +
                  ") and tessc cannot prove it dense nor the key stored: " + how +
                  " of a key a sparse array does not store inserts it, which is not safe on "
                  "executor threads" + (pair_why.empty() ? "" : " (" + pair_why + ")") +
                  "; create it with DistArray::dense, filled or random, look it up with get or "
                  "find (which never insert), or make it from the loop's space with permuted(...) "
                  "and look it up at the permuted key");
}

void BodyWalker::Note(SourceLocation loc, std::string text) {
  for (const auto& n : out_->notes) {
    if (n.first == loc && n.second == text) return;
  }
  out_->notes.emplace_back(loc, text);
  out_->result.conservative.push_back(text);
}

std::optional<int> BodyWalker::RelaxedStaleness(const ValueDecl* decl) {
  const auto* vd = dyn_cast<VarDecl>(decl);
  if (vd == nullptr || !vd->hasInit()) return std::nullopt;
  const auto* call = dyn_cast<CallExpr>(Strip(vd->getInit(), ctx_));
  if (call == nullptr || call->getNumArgs() < 3) return std::nullopt;
  auto v = EvalConstInt(call->getArg(2), ctx_);
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

void BodyWalker::AddAccess(int array, std::vector<Affine> subs, Use use, SourceLocation loc,
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

const Value* BodyWalker::Lookup(const Decl* d) const {
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
    auto f = it->find(d);
    if (f != it->end()) return &f->second;
  }
  return nullptr;
}

bool BodyWalker::IsReassigned(const ValueDecl* vd, const Stmt* s, const Stmt* parent) {
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

bool BodyWalker::IsMutatedInScope(const VarDecl* vd) {
  for (const Stmt* scope : mutation_scopes_) {
    if (MutatedIn(scope, vd)) return true;
  }
  return false;
}

BodyWalker::Uses BodyWalker::ClassifyUses(const VarDecl* vd, const Stmt* s, const Stmt* parent) {
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

bool BodyWalker::MutatedIn(const Stmt* scope, const VarDecl* vd) {
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

ExprMutationAnalyzer& BodyWalker::Mutations(const Stmt* scope) {
  auto& slot = mutation_analyzers_[scope];
  if (slot == nullptr) slot = std::make_unique<ExprMutationAnalyzer>(*scope, ctx_);
  return *slot;
}

bool BodyWalker::IsInside(const Decl* d, const Stmt* s) const {
  if (s == nullptr) return false;
  SourceRange r = s->getSourceRange();
  SourceLocation l = d->getLocation();
  return !sm_.isBeforeInTranslationUnit(l, r.getBegin()) &&
         !sm_.isBeforeInTranslationUnit(r.getEnd(), l);
}

}  // namespace tessera::compiler

// BodyWalker's frame: the walk's entry point, the arrays of a site, recording accesses and notes,
// and the questions about variables (bound values, re-pointing, mutation) the other parts ask.
#include "body_walker.h"

#include "array_origin.h"

#include <algorithm>

#include "clang/AST/ExprCXX.h"
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
  return static_cast<int>(model_.arrays.size()) - 1;
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

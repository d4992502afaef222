#include "clang_util.h"

#include "clang/AST/ExprCXX.h"

namespace tessera::compiler {

using namespace clang;  // NOLINT(build/namespaces): the file is all Clang AST code

namespace {

bool InNamespace(const Decl* d, StringRef name) {
  for (const DeclContext* dc = d->getDeclContext(); dc != nullptr; dc = dc->getParent()) {
    if (const auto* ns = dyn_cast<NamespaceDecl>(dc)) {
      if (ns->getName() == name && isa<TranslationUnitDecl>(ns->getDeclContext())) return true;
    }
  }
  return false;
}

}  // namespace

const CXXRecordDecl* RecordOf(QualType t) {
  t = t.getNonReferenceType();
  if (const auto* p = t->getAs<PointerType>()) t = p->getPointeeType();
  return t->getAsCXXRecordDecl();
}

TypeKind Classify(QualType t) {
  const CXXRecordDecl* rd = RecordOf(t);
  if (rd == nullptr) return TypeKind::kOther;
  // SparseRowView<T, N>::Iterator is nested in the view; its Entry is a SparseRowEntry.
  if (const auto* outer = dyn_cast<CXXRecordDecl>(rd->getDeclContext())) {
    if (outer->getName() == "SparseRowView" && InTesseraNamespace(outer)) {
      return TypeKind::kSparseRowView;
    }
  }
  const auto* ns = dyn_cast<NamespaceDecl>(rd->getDeclContext());
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
  if (name == "SparseRowView" || name == "SparseRowEntry") return TypeKind::kSparseRowView;
  if (name == "Accumulator") return TypeKind::kAccumulator;
  return TypeKind::kOther;
}

bool IsArrayLike(TypeKind k) {
  return k == TypeKind::kDistArray || k == TypeKind::kRelaxedArray || k == TypeKind::kRowView ||
         k == TypeKind::kRelaxedRowView;
}

bool InTesseraNamespace(const Decl* d) { return InNamespace(d, "tessera"); }
bool InStdNamespace(const Decl* d) { return InNamespace(d, "std"); }

bool IsNarrowingIntCast(const CastExpr* cast, const ASTContext& ctx) {
  const QualType to = cast->getType();
  const QualType from = cast->getSubExpr()->getType();
  if (!to->isIntegralOrEnumerationType() || !from->isIntegralOrEnumerationType()) return false;
  if (to->isDependentType() || from->isDependentType()) return false;
  const uint64_t wt = ctx.getIntWidth(to);
  const uint64_t wf = ctx.getIntWidth(from);
  if (wt < wf) return true;
  return wt == wf && wt < 64 && to->isSignedIntegerOrEnumerationType() !=
                                    from->isSignedIntegerOrEnumerationType();
}

bool IsIteratorLike(QualType t) {
  const CXXRecordDecl* rd = t.getNonReferenceType()->getAsCXXRecordDecl();
  if (rd == nullptr || !rd->hasDefinition()) return false;
  for (const CXXMethodDecl* m : rd->methods()) {
    const OverloadedOperatorKind k = m->getOverloadedOperator();
    if (k == OO_Star || k == OO_Arrow || k == OO_Subscript) return true;
  }
  return false;
}

bool IteratorToConst(QualType t) {
  const CXXRecordDecl* rd = t.getNonReferenceType()->getAsCXXRecordDecl();
  if (rd == nullptr) return false;
  if (rd->getName().contains("const_iterator")) return true;
  if (const auto* spec = dyn_cast<ClassTemplateSpecializationDecl>(rd)) {
    const TemplateArgumentList& args = spec->getTemplateArgs();
    if (args.size() >= 1 && args[0].getKind() == TemplateArgument::Type) {
      const QualType a = args[0].getAsType();
      if (a->isPointerType()) return a->getPointeeType().isConstQualified();
      return a.isConstQualified();
    }
  }
  return false;
}

const Expr* Strip(const Expr* e, const ASTContext& ctx) {
  while (true) {
    const Expr* before = e;
    e = e->IgnoreParens();
    if (const auto* ice = dyn_cast<ImplicitCastExpr>(e); ice && !IsNarrowingIntCast(ice, ctx)) {
      e = ice->getSubExpr();
    }
    if (const auto* fe = dyn_cast<FullExpr>(e)) e = fe->getSubExpr();
    if (const auto* st = dyn_cast<SubstNonTypeTemplateParmExpr>(e)) e = st->getReplacement();
    if (const auto* mte = dyn_cast<MaterializeTemporaryExpr>(e)) e = mte->getSubExpr();
    if (const auto* bte = dyn_cast<CXXBindTemporaryExpr>(e)) e = bte->getSubExpr();
    if (const auto* ce = dyn_cast<ExplicitCastExpr>(e)) {
      if ((isa<CXXFunctionalCastExpr>(ce) || isa<CXXStaticCastExpr>(ce) || isa<CStyleCastExpr>(ce)) &&
          !IsNarrowingIntCast(ce, ctx)) {
        e = ce->getSubExpr();
      }
    }
    if (const auto* ce = dyn_cast<CXXConstructExpr>(e)) {
      if (ce->getNumArgs() == 1 && ce->getConstructor()->isCopyOrMoveConstructor()) {
        e = ce->getArg(0);
      }
    }
    if (e == before) return e;
  }
}

bool ArrayTypeArgs(QualType t, QualType* elem, int* rank) {
  const auto* spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(RecordOf(t));
  if (spec == nullptr || spec->getTemplateArgs().size() < 2) return false;
  if (spec->getTemplateArgs()[1].getKind() != TemplateArgument::Integral) return false;
  *elem = spec->getTemplateArgs()[0].getAsType();
  *rank = static_cast<int>(spec->getTemplateArgs()[1].getAsIntegral().getExtValue());
  return true;
}

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

}  // namespace tessera::compiler

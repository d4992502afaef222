// CollectSite: from one parallel_for call to the walk of its body (BodyWalker, body_walker.h):
// checks the call's shape (a DistArray space, a lambda body, the DataParallel permission) and
// picks the body's instantiation for this call.
#include "access_collector.h"

#include "body_walker.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace tessera::compiler {
namespace {

using namespace clang;  // NOLINT(build/namespaces): the file is all Clang AST code

const LambdaExpr* FindLambda(const Expr* e, const ASTContext& ctx) {
  e = Strip(e, ctx);
  if (const auto* l = dyn_cast<LambdaExpr>(e)) return l;
  if (const auto* dre = dyn_cast<DeclRefExpr>(e)) {
    if (const auto* vd = dyn_cast<VarDecl>(dre->getDecl())) {
      if (vd->hasInit()) return dyn_cast<LambdaExpr>(Strip(vd->getInit(), ctx));
    }
  }
  return nullptr;
}

std::optional<int> PermissionStaleness(ASTContext& ctx, const Expr* arg, bool* known) {
  *known = true;
  const Expr* e = Strip(arg, ctx);
  if (const auto* dre = dyn_cast<DeclRefExpr>(e)) {
    if (const auto* vd = dyn_cast<VarDecl>(dre->getDecl()); vd && vd->hasInit()) e = Strip(vd->getInit(), ctx);
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
  const Expr* space = Strip(call->getArg(0), ctx);
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
  const LambdaExpr* lambda = FindLambda(call->getArg(1), ctx);
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

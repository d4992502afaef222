#include "tessera/compiler/analyzer.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "access_collector.h"
#include "array_origin.h"
#include "clang/AST/ASTConsumer.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "clang/Tooling/JSONCompilationDatabase.h"
#include "clang/Tooling/Tooling.h"

namespace tessera::compiler {
namespace {

using namespace clang;  // NOLINT(build/namespaces)

// Finds parallel_for calls and indexes all calls, in the main file only (headers are never the
// place of a call site, and skipping them keeps tessc close to -fsyntax-only in cost).
class SiteFinder : public RecursiveASTVisitor<SiteFinder> {
 public:
  explicit SiteFinder(ASTContext& ctx) : sm_(ctx.getSourceManager()) {}
  bool shouldVisitTemplateInstantiations() const { return true; }
  bool shouldVisitLambdaBodies() const { return true; }

  bool TraverseDecl(Decl* d) {
    if (d == nullptr) return true;
    if (!isa<TranslationUnitDecl>(d) && d->getLocation().isValid() &&
        !sm_.isInMainFile(sm_.getExpansionLoc(d->getLocation()))) {
      return true;
    }
    // Track the function being traversed (cheaper than asking the AST's parent map, which Clang
    // would build for the whole translation unit, headers included).
    auto* fd = dyn_cast<FunctionDecl>(d);
    if (fd != nullptr) functions_.push_back(fd);
    const bool ok = RecursiveASTVisitor::TraverseDecl(d);
    if (fd != nullptr) functions_.pop_back();
    return ok;
  }

  bool VisitCallExpr(CallExpr* call) {
    if (call->isTypeDependent() || call->isValueDependent()) return true;
    if (IsParallelForCall(call)) {
      // Every instantiation of a call in a template is its own site; the consumer groups them.
      if (seen_.insert(call).second) {
        sites.push_back(call);
        enclosing.push_back(functions_.empty() ? nullptr : functions_.back());
      }
      return true;
    }
    if (const FunctionDecl* fd = call->getDirectCallee()) {
      calls[fd->getCanonicalDecl()].push_back(call);
    }
    return true;
  }

  std::vector<const CallExpr*> sites;
  std::vector<const FunctionDecl*> enclosing;  // parallel to `sites`
  CallIndex calls;

 private:
  SourceManager& sm_;
  std::vector<const FunctionDecl*> functions_;
  std::set<const CallExpr*> seen_;
};

class Sink {
 public:
  std::vector<SiteResult> sites;
  std::vector<SerialSite> serial_sites;
  int sites_total = 0;
  bool site_error = false;
  std::set<std::string> files;
  bool prefer_data_parallel = false;  // AnalyzerOptions::prefer_data_parallel
};

std::string ArrayName(const SiteModel& m, int access) {
  return m.arrays[m.accesses[access].array].name;
}

class SiteConsumer : public ASTConsumer {
 public:
  explicit SiteConsumer(Sink* sink) : sink_(sink) {}

  void HandleTranslationUnit(ASTContext& ctx) override {
    DiagnosticsEngine& diags = ctx.getDiagnostics();
    SourceManager& sm = ctx.getSourceManager();
    for (auto it = sm.fileinfo_begin(); it != sm.fileinfo_end(); ++it) {
      sink_->files.insert(std::string(it->getFirst()->getName()));
    }
    if (diags.hasErrorOccurred()) return;  // Clang already explained; the AST may be partial
    SiteFinder finder(ctx);
    finder.TraverseDecl(ctx.getTranslationUnitDecl());
    // Instantiations of one call (a template, a generic lambda) share a source location, and the
    // runtime finds one schedule per location: they must agree.
    std::vector<std::vector<size_t>> groups;
    std::map<unsigned, size_t> group_of;
    for (size_t i = 0; i < finder.sites.size(); ++i) {
      const unsigned loc = sm.getExpansionLoc(finder.sites[i]->getBeginLoc()).getRawEncoding();
      auto [it, fresh] = group_of.emplace(loc, groups.size());
      if (fresh) groups.emplace_back();
      groups[it->second].push_back(i);
    }
    for (const std::vector<size_t>& group : groups) {
      std::vector<CollectedSite> collected;
      for (size_t i : group) {
        collected.push_back(CollectSite(ctx, finder.sites[i], finder.enclosing[i], finder.calls));
      }
      ReportGroup(ctx, std::move(collected), finder.sites[group.front()]);
    }
    ReportRankConditionalSaves(ctx, finder.calls);
  }

 private:
  // save_array is collective for an array a distributed job keeps partitioned; called under a
  // rank-dependent condition it counts as a serial use (array_origin.h), so the array stays
  // whole on every worker. Say so where it happens, in source order.
  void ReportRankConditionalSaves(ASTContext& ctx, const CallIndex& calls) {
    DiagnosticsEngine& diags = ctx.getDiagnostics();
    SourceManager& sm = ctx.getSourceManager();
    std::map<unsigned, std::pair<const CallExpr*, SourceLocation>> found;  // by location
    for (const auto& [callee, list] : calls) {
      for (const CallExpr* call : list) {
        if (!IsSaveCall(call) || call->getNumArgs() == 0) continue;
        const SourceLocation cond = RankCondition(call, ctx);
        if (cond.isInvalid()) continue;
        found.emplace(sm.getExpansionLoc(call->getBeginLoc()).getRawEncoding(),
                      std::make_pair(call, cond));
      }
    }
    const unsigned warn = diags.getCustomDiagID(
        DiagnosticsEngine::Warning,
        "%0 under a condition that depends on the worker's rank: the array stays whole on "
        "every worker of a distributed job for it; call %0 on every worker instead (it is "
        "collective, and saves a partitioned array where its rows live)");
    const unsigned note =
        diags.getCustomDiagID(DiagnosticsEngine::Note, "the rank-dependent condition");
    for (const auto& [loc, call_cond] : found) {
      const CallExpr* call = call_cond.first;
      diags.Report(call->getBeginLoc(), warn) << call->getDirectCallee()->getName();
      diags.Report(call_cond.second, note);
    }
  }

  void Report(ASTContext& ctx, CollectedSite site, const CallExpr* call) {
    DiagnosticsEngine& diags = ctx.getDiagnostics();
    ++sink_->sites_total;
    SourceLocation call_loc = call->getBeginLoc();
    if (!site.analyzable) {
      unsigned id = diags.getCustomDiagID(
          DiagnosticsEngine::Warning,
          "tessc cannot analyse this parallel_for (%0); it will run serially");
      diags.Report(call_loc, id) << site.why_not;
      AddSerial(site, {site.why_not});
      return;
    }
    SiteResult& r = site.result;
    r.model.prefer_data_parallel = sink_->prefer_data_parallel;
    r.decision = ChooseSchedule(r.model);
    const SiteModel& m = r.model;
    if (!site.serial_reasons.empty() && r.decision.schedule) {
      // Whatever schedule the arrays allow, the body reaches state tessc cannot model: the
      // serial loop is the only safe execution. No schedule is emitted, so the runtime runs it
      // serially (and says so).
      unsigned id = diags.getCustomDiagID(
          DiagnosticsEngine::Warning,
          "parallel_for over '%0' will run serially: its body reaches state tessc cannot model "
          "(%1)");
      const size_t n = site.serial_reasons.size();
      diags.Report(call_loc, id) << m.space_array
                                 << (std::to_string(n) + " reason" + (n == 1 ? "" : "s") +
                                     " below");
      EmitSerialNotes(diags, site);
      EmitConservativeNotes(diags, site);
      std::vector<std::string> reasons;
      for (const auto& reason : site.serial_reasons) reasons.push_back(reason.second);
      AddSerial(site, std::move(reasons));
      return;
    }
    if (r.decision.schedule) {
      unsigned id = diags.getCustomDiagID(DiagnosticsEngine::Remark,
                                          "parallel_for over '%0' %1");
      std::string summary = Summary(r);
      if (!site.notes.empty()) {
        summary += "; conservative where tessc could not see through (" +
                   std::to_string(site.notes.size()) + " note" +
                   (site.notes.size() == 1 ? "" : "s") + ")";
      }
      diags.Report(call_loc, id) << m.space_array << summary;
      EmitConservativeNotes(diags, site);
      sink_->sites.push_back(std::move(r));
      return;
    }
    sink_->site_error = true;
    const ScheduleError& err = *r.decision.error;
    const Dependence& dep = err.blocking;
    const std::string vec = ToString(dep.vector);
    const std::string array = ArrayName(m, dep.first);
    if (err.kind == ScheduleError::Kind::kNonAdditive) {
      unsigned id = diags.getCustomDiagID(
          DiagnosticsEngine::Error,
          "data-parallel parallel_for over '%0' needs additive writes, but this write to '%1' is "
          "not additive (dependence vector %2)");
      diags.Report(site.access_locs[err.nonadditive_access], id) << m.space_array << array << vec;
      NoteVia(diags, site, err.nonadditive_access);
      int other = err.nonadditive_access == dep.first ? dep.second : dep.first;
      NoteConflict(diags, site, other, err.nonadditive_access);
      unsigned fix = diags.getCustomDiagID(
          DiagnosticsEngine::Note,
          "write '%0' with '+=' / '-=', or make it a tessera::RelaxedArray updated with add()");
      diags.Report(call_loc, fix) << array;
    } else {
      unsigned id = diags.getCustomDiagID(
          DiagnosticsEngine::Error,
          "parallel_for over '%0' cannot be parallelized: accesses to '%1' conflict across "
          "iterations with dependence vector %2");
      diags.Report(site.access_locs[dep.first], id) << m.space_array << array << vec;
      NoteVia(diags, site, dep.first);
      NoteConflict(diags, site, dep.second, dep.first);
      unsigned fix = diags.getCustomDiagID(
          DiagnosticsEngine::Note,
          "to run it anyway, make '%0' a tessera::RelaxedArray (a parameter-server table with "
          "additive updates and bounded staleness), or permit data-parallel execution with "
          "tessera::parallel_for(%1, body, tessera::DataParallel{.staleness = s}) if the "
          "conflicting writes are additive");
      diags.Report(call_loc, fix) << array << m.space_array;
      if (m.arrays[m.accesses[dep.first].array].may_alias) {
        unsigned alias = diags.getCustomDiagID(
            DiagnosticsEngine::Note,
            "tessc could not tell which array '%0' is (see the conservative note); access the "
            "array through a name it can follow, or relax or permit as above");
        diags.Report(call_loc, alias) << array;
      }
    }
    EmitSerialNotes(diags, site);
    EmitConservativeNotes(diags, site);
  }

  // One call site with one or more instantiations.
  void ReportGroup(ASTContext& ctx, std::vector<CollectedSite> sites, const CallExpr* call) {
    if (sites.size() == 1) {
      Report(ctx, std::move(sites.front()), call);
      return;
    }
    // An instantiation that cannot run in parallel decides for all (serial, or its error).
    std::vector<std::string> schedules;
    for (CollectedSite& site : sites) {
      if (!site.analyzable || !site.serial_reasons.empty()) {
        Report(ctx, std::move(site), call);
        return;
      }
      site.result.model.prefer_data_parallel = sink_->prefer_data_parallel;
      site.result.decision = ChooseSchedule(site.result.model);
      if (!site.result.decision.schedule) {
        Report(ctx, std::move(site), call);
        return;
      }
      nlohmann::ordered_json j = SiteToJson(site.result);
      j.erase("function");
      schedules.push_back(j.dump());
    }
    if (std::all_of(schedules.begin(), schedules.end(),
                    [&](const std::string& s) { return s == schedules.front(); })) {
      Report(ctx, std::move(sites.front()), call);
      return;
    }
    ++sink_->sites_total;
    sink_->site_error = true;
    DiagnosticsEngine& diags = ctx.getDiagnostics();
    unsigned id = diags.getCustomDiagID(
        DiagnosticsEngine::Error,
        "parallel_for over '%0' is instantiated %1 times with different accesses (its subscripts "
        "depend on a template parameter), but a call site has one schedule");
    diags.Report(call->getBeginLoc(), id)
        << sites.front().result.model.space_array << static_cast<unsigned>(sites.size());
    unsigned each = diags.getCustomDiagID(DiagnosticsEngine::Note, "in '%0': %1");
    for (const CollectedSite& site : sites) {
      diags.Report(call->getBeginLoc(), each) << site.result.function << Summary(site.result);
    }
    unsigned fix = diags.getCustomDiagID(
        DiagnosticsEngine::Note,
        "give each instantiation its own parallel_for call (for example one per value of the "
        "template parameter, in an if constexpr), or make the subscript a function argument");
    diags.Report(call->getBeginLoc(), fix);
  }

  void NoteConflict(DiagnosticsEngine& diags, const CollectedSite& site, int other, int first) {
    if (other == first) {
      unsigned id = diags.getCustomDiagID(
          DiagnosticsEngine::Note, "the conflict is between this access in different iterations");
      diags.Report(site.access_locs[first], id);
    } else {
      unsigned id = diags.getCustomDiagID(DiagnosticsEngine::Note, "conflicting access to '%0'");
      diags.Report(site.access_locs[other], id) << ArrayName(site.result.model, other);
      NoteVia(diags, site, other);
    }
  }

  // An access inside a helper: show the call in the loop body that reaches it.
  void NoteVia(DiagnosticsEngine& diags, const CollectedSite& site, int access) {
    SourceLocation via = site.access_via[access];
    if (via.isInvalid()) return;
    unsigned id = diags.getCustomDiagID(DiagnosticsEngine::Note,
                                        "reached from the loop body through this call");
    diags.Report(via, id);
  }

  // Records a site tessc runs serially, so that the runtime can say so (and why).
  void AddSerial(const CollectedSite& site, std::vector<std::string> reasons) {
    const SiteResult& r = site.result;
    sink_->serial_sites.push_back({r.file, r.line, r.column, r.function, std::move(reasons)});
  }

  void EmitSerialNotes(DiagnosticsEngine& diags, const CollectedSite& site) {
    unsigned id = diags.getCustomDiagID(DiagnosticsEngine::Note, "cannot see through: %0");
    for (const auto& [loc, text] : site.serial_reasons) diags.Report(loc, id) << text;
  }

  void EmitConservativeNotes(DiagnosticsEngine& diags, const CollectedSite& site) {
    unsigned id = diags.getCustomDiagID(DiagnosticsEngine::Note, "conservative: %0");
    for (const auto& [loc, text] : site.notes) diags.Report(loc, id) << text;
  }

  Sink* sink_;
};

class SiteAction : public ASTFrontendAction {
 public:
  explicit SiteAction(Sink* sink) : sink_(sink) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance&, StringRef) override {
    return std::make_unique<SiteConsumer>(sink_);
  }

 private:
  Sink* sink_;
};

class SiteActionFactory : public tooling::FrontendActionFactory {
 public:
  explicit SiteActionFactory(Sink* sink) : sink_(sink) {}
  std::unique_ptr<FrontendAction> create() override { return std::make_unique<SiteAction>(sink_); }

 private:
  Sink* sink_;
};

}  // namespace

Result<AnalysisResult> Analyze(const AnalyzerOptions& options) {
  if (options.sources.empty()) return Status::InvalidArgument("no source files given");
  std::unique_ptr<tooling::CompilationDatabase> db;
  std::string error;
  if (!options.build_path.empty()) {
    db = tooling::CompilationDatabase::autoDetectFromDirectory(options.build_path, error);
    if (db == nullptr) {
      return Status::NotFound("cannot load compile_commands.json from '" + options.build_path +
                              "': " + error);
    }
  } else if (options.have_fixed_args) {
    db = std::make_unique<tooling::FixedCompilationDatabase>(".", options.fixed_args);
  } else {
    db = tooling::CompilationDatabase::autoDetectFromSource(options.sources.front(), error);
    if (db == nullptr) {
      return Status::NotFound("no compile_commands.json found for '" + options.sources.front() +
                              "' (pass -p <build dir> or compiler flags after --): " + error);
    }
  }
  tooling::ClangTool tool(*db, options.sources);
  tool.appendArgumentsAdjuster(
      [](const tooling::CommandLineArguments& args, StringRef) {
        tooling::CommandLineArguments out = args;
        bool has_resource_dir = false;
        for (const std::string& a : args) has_resource_dir |= a.rfind("-resource-dir", 0) == 0;
        // GCC-only flags from a g++ compile command must not stop Clang.
        out.insert(out.begin() + 1, "-Wno-unknown-warning-option");
        out.insert(out.begin() + 1, "-Qunused-arguments");
        if (!has_resource_dir) out.insert(out.begin() + 1, "-resource-dir=" TESSC_RESOURCE_DIR);
        return out;
      });
  if (!options.build_path.empty() && options.have_fixed_args) {
    tool.appendArgumentsAdjuster(tooling::getInsertArgumentAdjuster(
        options.fixed_args, tooling::ArgumentInsertPosition::END));
  }
  Sink sink;
  sink.prefer_data_parallel = options.prefer_data_parallel;
  SiteActionFactory factory(&sink);
  const int rc = tool.run(&factory);
  AnalysisResult result;
  result.sites = std::move(sink.sites);
  result.serial_sites = std::move(sink.serial_sites);
  result.sites_total = sink.sites_total;
  result.dependencies.assign(sink.files.begin(), sink.files.end());
  // Under -verify Clang itself judges the diagnostics (expected errors are a pass).
  bool verify = false;
  for (const std::string& a : options.fixed_args) verify |= a == "-verify";
  result.ok = rc == 0 && (verify || !sink.site_error);
  return result;
}

}  // namespace tessera::compiler
